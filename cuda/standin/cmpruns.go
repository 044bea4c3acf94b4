//go:build ignore

// cmpruns compares two `dpfil train` run directories of the same configuration and
// seed, one on the CPU and one on a cuda device (make cuda-standin-check runs it on
// bin/dpfil-cuda's CPU and stand-in runs):
//
//   - the test accuracy must be equal;
//
//   - every sample's dFIL must agree within -rtol (relative), and the same samples
//     must have one;
//
//   - the final parameters must agree within -rtol in relative L2 norm.
//
//     go run cuda/standin/cmpruns.go [-rtol 1e-4] CPU_DIR DEVICE_DIR
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/dpfil/dpfil/accounting"
)

type result struct {
	TestAccuracy *float64 `json:"test_accuracy"`
	Steps        int      `json:"steps"`
	DFILPath     string   `json:"dfil_path"`
	ParamsPath   string   `json:"params_path"`
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
	dfil, err := accounting.LoadDFIL(filepath.Join(dir, r.DFILPath))
	if err != nil {
		return r, nil, nil, err
	}
	pb, err := os.ReadFile(filepath.Join(dir, r.ParamsPath))
	if err != nil {
		return r, nil, nil, err
	}
	params, err := accounting.DecodeNPY(bytes.NewReader(pb))
	if err != nil {
		return r, nil, nil, fmt.Errorf("%s: %w", r.ParamsPath, err)
	}
	return r, dfil, params, nil
}

func main() {
	rtol := flag.Float64("rtol", 1e-4, "relative tolerance for dFIL and parameters")
	flag.Parse()
	if flag.NArg() != 2 {
		fmt.Fprintln(os.Stderr, "usage: go run cuda/standin/cmpruns.go [-rtol 1e-4] CPU_DIR DEVICE_DIR")
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
	if *cr.TestAccuracy != *dr.TestAccuracy {
		fail("test accuracy: CPU %v, device %v", *cr.TestAccuracy, *dr.TestAccuracy)
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
		if e := math.Abs(df[i]-cf[i]) / cf[i]; e > worst || math.IsNaN(e) {
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
	fmt.Printf("cmpruns: %d steps, test accuracy %v on both, %d samples' dFIL within %.2g relative (worst), parameters within %.2g\n",
		cr.Steps, *cr.TestAccuracy, sampled, worst, perr)
}
