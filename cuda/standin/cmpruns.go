//go:build ignore

// cmpruns compares two `dpfil train` run directories of the same configuration and
// seed, one on the CPU and one on a cuda device (make cuda-standin-check runs it on
// bin/dpfil-cuda's CPU and stand-in runs):
//
//   - the test accuracy must be equal (within -acc-tol, absolute: a GPU's float32
//     sums round differently from the CPU's, which can flip a test sample);
//
//   - every sample's dFIL must agree within -rtol (relative), and the same samples
//     must have one;
//
//   - the final parameters must agree within -rtol in relative L2 norm;
//
//   - with -transcripts, both runs must have recorded their transcripts
//     (--record-transcript) and every step must have the same batch and released
//     noisy sums within -rtol in relative L2 norm: the same noise (the counter-based
//     Philox draws of both devices; a different draw would differ by ≈ √2
//     relative), the clipped sums up to float32 rounding;
//
//   - with -resident, the second run must report device-resident steps (result.json
//     "device") and, when it recorded no transcript, per step at most the batch
//     indices, as many bytes of labels and 2k as many of FIL coordinates and one-hot
//     values plus 1 KiB to the device, 3 bytes per index byte (float32 losses,
//     float64 FIL values) plus 72 to the host, and 3 synchronisations every step.
//
//     go run cuda/standin/cmpruns.go [-rtol 1e-4] [-acc-tol 0] [-transcripts] [-resident] RUN_DIR DEVICE_DIR
//
// scripts/gpu-check.sh runs it as a binary (go build -o bin/cmpruns
// cuda/standin/cmpruns.go) on the GPU host, which has no Go.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/dpfil/dpfil/internal/npy"
	"github.com/dpfil/dpfil/train/fil"
	"github.com/dpfil/dpfil/transcript"
)

type result struct {
	TestAccuracy *float64 `json:"test_accuracy"`
	Steps        int      `json:"steps"`
	FILCoords    int      `json:"fil_coords_used"`
	DFILPath     string   `json:"dfil_path"`
	ParamsPath   string   `json:"params_path"`
	Device       *struct {
		Device          string             `json:"device"`
		Resident        bool               `json:"resident"`
		NotResident     string             `json:"not_resident"`
		UploadBytes     int64              `json:"upload_bytes"`
		BatchIndexBytes float64            `json:"batch_index_bytes"`
		PerStep         map[string]float64 `json:"per_step"`
		MaxStep         map[string]float64 `json:"max_step"`
	} `json:"device"`
}

func load(dir string) (result, []float64, []float64, error) {
	var r result
	b, err := os.ReadFile(filepath.Join(dir, "result.json"))
	if err != nil {
		return r, nil, nil, err
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, nil, nil, fmt.Errorf("%s/result.json: %w", dir, err)
	}
	if r.TestAccuracy == nil || r.DFILPath == "" || r.ParamsPath == "" {
		return r, nil, nil, fmt.Errorf("%s/result.json: no test_accuracy, dfil_path or params_path (run with FIL accounting)", dir)
	}
	dfil, err := fil.Load(filepath.Join(dir, r.DFILPath))
	if err != nil {
		return r, nil, nil, err
	}
	pb, err := os.ReadFile(filepath.Join(dir, r.ParamsPath))
	if err != nil {
		return r, nil, nil, err
	}
	params, err := npy.ReadVector(bytes.NewReader(pb))
	if err != nil {
		return r, nil, nil, fmt.Errorf("%s: %w", r.ParamsPath, err)
	}
	return r, dfil, params, nil
}

func main() {
	rtol := flag.Float64("rtol", 1e-4, "relative tolerance for dFIL, parameters and released sums")
	resident := flag.Bool("resident", false, "require a device-resident second run within the per-step transfer bounds")
	transcripts := flag.Bool("transcripts", false, "require and compare the runs' transcripts")
	accTol := flag.Float64("acc-tol", 0, "absolute tolerance for the test accuracy (0: equal)")
	flag.Parse()
	if flag.NArg() != 2 {
		fmt.Fprintln(os.Stderr, "usage: go run cuda/standin/cmpruns.go [-rtol 1e-4] [-acc-tol 0] [-transcripts] [-resident] RUN_DIR DEVICE_DIR")
		os.Exit(2)
	}
	fail := func(format string, a ...any) {
		fmt.Fprintf(os.Stderr, "cmpruns: "+format+"\n", a...)
		os.Exit(1)
	}
	cr, cf, cp, err := load(flag.Arg(0))
	if err != nil {
		fail("%v", err)
	}
	dr, df, dp, err := load(flag.Arg(1))
	if err != nil {
		fail("%v", err)
	}
	if cr.Steps != dr.Steps || len(cf) != len(df) || len(cp) != len(dp) {
		fail("the runs differ in shape: steps %d/%d, dFIL %d/%d, parameters %d/%d", cr.Steps, dr.Steps, len(cf), len(df), len(cp), len(dp))
	}
	if d := math.Abs(*cr.TestAccuracy - *dr.TestAccuracy); !(d <= *accTol) {
		fail("test accuracy: CPU %v, device %v (difference %.3g > %g)", *cr.TestAccuracy, *dr.TestAccuracy, d, *accTol)
	}
	sampled, worst, worstAt := 0, 0.0, -1
	for i := range cf {
		if (cf[i] == 0) != (df[i] == 0) {
			fail("sample %d has dFIL %v on the CPU and %v on the device", i, cf[i], df[i])
		}
		if cf[i] == 0 {
			continue
		}
		sampled++
		if e := math.Abs(df[i]-cf[i]) / cf[i]; e > worst || math.IsNaN(e) || worstAt < 0 {
			worst, worstAt = e, i
		}
	}
	if sampled == 0 {
		fail("no sample has a dFIL")
	}
	if worst > *rtol || math.IsNaN(worst) {
		fail("dFIL of sample %d: CPU %v, device %v (relative error %.3g > %g)", worstAt, cf[worstAt], df[worstAt], worst, *rtol)
	}
	var num, den float64
	for i := range cp {
		d := dp[i] - cp[i]
		num += d * d
		den += cp[i] * cp[i]
	}
	perr := math.Sqrt(num / den)
	if perr > *rtol || math.IsNaN(perr) {
		fail("final parameters: relative L2 error %.3g > %g", perr, *rtol)
	}
	fmt.Printf("cmpruns: %d steps, test accuracy %v (CPU) and %v (device), %d samples' dFIL within %.2g relative (worst), parameters within %.2g (tolerances: accuracy %g, relative %g)\n",
		cr.Steps, *cr.TestAccuracy, *dr.TestAccuracy, sampled, worst, perr, *accTol, *rtol)
	if *transcripts {
		msg, err := compareTranscripts(flag.Arg(0), flag.Arg(1), *rtol)
		if err != nil {
			fail("%v", err)
		}
		fmt.Println("cmpruns: " + msg)
	}
	if *resident {
		d := dr.Device
		if d == nil || !d.Resident {
			why := "no device report"
			if d != nil {
				why = d.NotResident
			}
			fail("the device run's steps were not resident: %s", why)
		}
		if _, err := os.Stat(filepath.Join(flag.Arg(1), "transcript.bin")); err != nil {
			idx, k := d.BatchIndexBytes, float64(dr.FILCoords)
			up, down := d.PerStep["htod_bytes"], d.PerStep["dtoh_bytes"]
			if up > idx*(2+2*k)+1024 || down > 3*idx+72 || d.MaxStep["syncs"] != 3 || d.PerStep["syncs"] != 3 {
				fail("device run, per step: %.0f bytes to the device (bound %.0f), %.0f to the host (bound %.0f), %.2f synchronisations on average and %.0f at most (want 3)",
					up, idx*(2+2*k)+1024, down, 3*idx+72, d.PerStep["syncs"], d.MaxStep["syncs"])
			}
		}
		fmt.Printf("cmpruns: device-resident run on %s: %d bytes uploaded once; per step %.0f bytes to the device (%.0f of batch indices), %.0f to the host, %.0f synchronisations, %.0f launches, %.0f GEMMs\n",
			d.Device, d.UploadBytes, d.PerStep["htod_bytes"], d.BatchIndexBytes, d.PerStep["dtoh_bytes"], d.PerStep["syncs"], d.PerStep["launches"], d.PerStep["gemms"])
	}
}

// compareTranscripts compares the two runs' transcripts step by step ("" when
// neither recorded one).
func compareTranscripts(cpuDir, devDir string, rtol float64) (string, error) {
	cp, dp := filepath.Join(cpuDir, "transcript.bin"), filepath.Join(devDir, "transcript.bin")
	_, e1 := os.Stat(cp)
	_, e2 := os.Stat(dp)
	if e1 != nil && e2 != nil {
		return "", nil
	}
	ct, err := transcript.Open(cp)
	if err != nil {
		return "", err
	}
	dt, err := transcript.Open(dp)
	if err != nil {
		return "", err
	}
	if !ct.Complete || !dt.Complete || len(ct.Steps) != len(dt.Steps) {
		return "", fmt.Errorf("transcripts: %d and %d steps (complete %v, %v)", len(ct.Steps), len(dt.Steps), ct.Complete, dt.Complete)
	}
	worst := 0.0
	for i, c := range ct.Steps {
		d := dt.Steps[i]
		if len(c.Batch) != len(d.Batch) || len(c.Released) != len(d.Released) {
			return "", fmt.Errorf("transcript step %d: batch %d/%d, released %d/%d values", i, len(c.Batch), len(d.Batch), len(c.Released), len(d.Released))
		}
		for j := range c.Batch {
			if c.Batch[j] != d.Batch[j] {
				return "", fmt.Errorf("transcript step %d: batch member %d is %d on the CPU, %d on the device", i, j, c.Batch[j], d.Batch[j])
			}
		}
		var num, den float64
		for j, v := range c.Released {
			e := float64(d.Released[j]) - float64(v)
			num += e * e
			den += float64(v) * float64(v)
		}
		e := math.Sqrt(num / den)
		if e > rtol || math.IsNaN(e) {
			return "", fmt.Errorf("transcript step %d: released noisy sums differ by %.3g relative (> %g): not the same noise", i, e, rtol)
		}
		worst = max(worst, e)
	}
	return fmt.Sprintf("transcripts: %d steps, the same batches, released noisy sums within %.2g relative (the same noise)", len(ct.Steps), worst), nil
}
