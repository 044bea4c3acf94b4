package transcript

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func trainHeader() Header {
	return Header{Model: "test", NumParams: 3, Steps: 4, Q: 0.25, Sigma: 1, Clip: 1, ClipMode: "smooth",
		LR: 0.5, BatchDenominator: 2, Seed: 9, Update: UpdateMomentum, Momentum: 0.5, WeightDecay: 0.1,
		Sampling: "shuffle", NTrain: 8, ConfigHash: "abc"}
}

var trainRel = [][]float32{{1, -2, 0.5}, {0.25, 0, -1}, {3, 1, 1}, {-0.5, 0.5, 2}}
var trainBatch = [][]int{{0, 7}, {3, 1}, {}, {6, 2}}

func writeTrainTranscript(t *testing.T, path string, steps int, close bool) {
	t.Helper()
	w, err := Create(path, trainHeader(), []float32{1, 0.5, -1})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < steps; i++ {
		if err := w.WriteTrainStep(i, trainRel[i], trainBatch[i]); err != nil {
			t.Fatal(err)
		}
	}
	if close {
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	} else {
		w.f.Close()
	}
}

// TestTrainTranscriptRoundTrip: batch indices round trip and Replay follows the
// momentum rule, checked against the rule written out by hand.
func TestTrainTranscriptRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.bin")
	writeTrainTranscript(t, path, 4, true)
	tr, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if !tr.Complete || len(tr.Steps) != 4 || tr.Header.Update != UpdateMomentum || tr.Header.NTrain != 8 {
		t.Fatalf("complete %v, %d steps, header %+v", tr.Complete, len(tr.Steps), tr.Header)
	}
	for i, s := range tr.Steps {
		if !reflect.DeepEqual(s.Batch, trainBatch[i]) || !reflect.DeepEqual(s.Released, trainRel[i]) || s.KnownMember != nil {
			t.Fatalf("step %d: batch %v released %v", i, s.Batch, s.Released)
		}
	}
	theta := []float64{1, 0.5, -1}
	vel := make([]float64, 3)
	var seen [][]float64
	got, err := tr.Replay(func(t int, th []float64) error {
		seen = append(seen, append([]float64(nil), th...))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for s := range trainRel {
		if !reflect.DeepEqual(seen[s], theta) {
			t.Fatalf("θ_%d = %v, want %v", s, seen[s], theta)
		}
		for i := range theta {
			g := float64(trainRel[s][i])/2 + 0.1*theta[i]
			vel[i] = 0.5*vel[i] + g
			theta[i] -= 0.5 * vel[i]
		}
	}
	for i := range theta {
		if math.Abs(got[i]-theta[i]) > 1e-15 {
			t.Fatalf("replayed θ %v, by hand %v", got, theta)
		}
	}
}

// TestResumeTranscript continues crashed and closed files from a step and compares
// with a file written in one go; bad resumes are rejected.
func TestResumeTranscript(t *testing.T) {
	dir := t.TempDir()
	want := filepath.Join(dir, "want.bin")
	writeTrainTranscript(t, want, 4, true)
	wantB, err := os.ReadFile(want)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name          string
		written, from int
		closed        bool
	}{
		{"crashed-at-3-resume-2", 3, 2, false},
		{"closed-resume-1", 4, 1, true},
		{"crashed-resume-0", 2, 0, false},
		{"crashed-resume-at-end", 3, 3, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, tc.name)
			writeTrainTranscript(t, p, tc.written, tc.closed)
			w, err := Resume(p, trainHeader(), tc.from)
			if err != nil {
				t.Fatal(err)
			}
			if w.Steps() != tc.from {
				t.Fatalf("resumed at %d, want %d", w.Steps(), tc.from)
			}
			for i := tc.from; i < 4; i++ {
				if err := w.WriteTrainStep(i, trainRel[i], trainBatch[i]); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != string(wantB) {
				t.Fatalf("resumed file differs from the one written in one go")
			}
		})
	}
	other := trainHeader()
	other.Seed++
	for _, tc := range []struct {
		name string
		h    Header
		from int
		err  string
	}{
		{"too-few-steps", trainHeader(), 3, "only 2 step records"},
		{"other-run", other, 1, "different run"},
		{"negative", trainHeader(), -1, "step -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, "bad-"+tc.name)
			writeTrainTranscript(t, p, 2, false)
			if _, err := Resume(p, tc.h, tc.from); err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("error %v, want one mentioning %q", err, tc.err)
			}
		})
	}
}

// TestTrainTranscriptBadBatch: a batch field whose length does not match its count,
// or an index past N, is rejected.
func TestTrainTranscriptBadBatch(t *testing.T) {
	for _, tc := range []struct {
		name  string
		batch []int
		patch func(p []byte) []byte
		err   string
	}{
		{"index past N", []int{8}, nil, "≥ N"},
		{"count too large", []int{1}, func(p []byte) []byte { p[len(p)-8]++; return p }, "batch has"},
		{"stray bytes", []int{1}, func(p []byte) []byte { return p[:len(p)-6] }, "stray"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := trainHeader()
			tr := &Transcript{Header: h}
			p := []byte{0, 0, 0, 0, 3, 0, 0, 0}
			p = append(p, make([]byte, 12)...)
			p = append(p, 0, 0, 0, 0, byte(len(tc.batch)), 0, 0, 0)
			for _, i := range tc.batch {
				p = append(p, byte(i), 0, 0, 0)
			}
			if tc.patch != nil {
				p = tc.patch(p)
			}
			if err := tr.apply(recStep, p); err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("error %v, want one mentioning %q", err, tc.err)
			}
		})
	}
}

// BenchmarkWriteTrainStep appends mlp-sized steps (7 960 values, batch 600).
func BenchmarkWriteTrainStep(b *testing.B) {
	h := trainHeader()
	h.NumParams, h.NTrain, h.BatchDenominator = 7960, 60000, 600
	w, err := Create(filepath.Join(b.TempDir(), "t.bin"), h, make([]float32, h.NumParams))
	if err != nil {
		b.Fatal(err)
	}
	rel := make([]float32, h.NumParams)
	batch := make([]int, 600)
	for i := range batch {
		batch[i] = 100 * i
	}
	b.SetBytes(int64(4*len(rel) + 4*len(batch)))
	for i := 0; b.Loop(); i++ {
		if err := w.WriteTrainStep(i, rel, batch); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
}

// TestAdamHeader: a header with Update "adam" needs plausible β1, β2, ε; Replay
// follows bias-corrected Adam, checked against the textbook form.
func TestAdamHeader(t *testing.T) {
	adam := trainHeader()
	adam.Update, adam.Momentum, adam.AdamBeta1, adam.AdamBeta2, adam.AdamEps = UpdateAdam, 0, 0.9, 0.999, 1e-8
	for _, tc := range []struct {
		name string
		mod  func(*Header)
		ok   bool
	}{
		{"valid", func(*Header) {}, true},
		{"beta1-one", func(h *Header) { h.AdamBeta1 = 1 }, false},
		{"beta2-negative", func(h *Header) { h.AdamBeta2 = -0.5 }, false},
		{"eps-zero", func(h *Header) { h.AdamEps = 0 }, false},
		{"eps-negative", func(h *Header) { h.AdamEps = -1e-8 }, false},
		{"unknown-update", func(h *Header) { h.Update = "adamw" }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := adam
			tc.mod(&h)
			path := filepath.Join(t.TempDir(), "t.bin")
			w, err := Create(path, h, []float32{1, 0.5, -1})
			if err != nil {
				t.Fatal(err)
			}
			for i := range trainRel {
				if err := w.WriteTrainStep(i, trainRel[i], trainBatch[i]); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			tr, err := Open(path)
			if !tc.ok {
				if err == nil {
					t.Fatal("implausible header accepted")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := tr.Replay(nil)
			if err != nil {
				t.Fatal(err)
			}
			theta, m, v := []float64{1, 0.5, -1}, make([]float64, 3), make([]float64, 3)
			for s := range trainRel {
				for i := range theta {
					g := float64(trainRel[s][i])/h.BatchDenominator + h.WeightDecay*theta[i]
					m[i] = h.AdamBeta1*m[i] + (1-h.AdamBeta1)*g
					v[i] = h.AdamBeta2*v[i] + (1-h.AdamBeta2)*g*g
					mh := m[i] / (1 - math.Pow(h.AdamBeta1, float64(s+1)))
					vh := v[i] / (1 - math.Pow(h.AdamBeta2, float64(s+1)))
					theta[i] -= h.LR * mh / (math.Sqrt(vh) + h.AdamEps)
				}
			}
			for i := range theta {
				if math.Abs(got[i]-theta[i]) > 1e-13 {
					t.Fatalf("replayed θ %v, by hand %v", got, theta)
				}
			}
		})
	}
}
