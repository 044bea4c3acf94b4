package transcript

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func writeTestTranscript(t *testing.T, path string) (Header, []float32, [][]float64, [][]bool) {
	t.Helper()
	h := Header{Model: "test", NumParams: 5, Known: []int{3, 8, 9}, Steps: 3, Q: 0.5, Sigma: 1,
		Clip: 0.1, LR: 1, BatchDenominator: 2, Seed: 4}
	theta0 := []float32{1, -2, 3.5, 0, 1e-3}
	rel := [][]float64{{1, 2, 3, 4, 5}, {-1, 0.5, 0.25, 0, 7}, {9, 8, 7, 6, 5}}
	mem := [][]bool{{true, false, true}, nil, {false, false, true}}
	w, err := Create(path, h, theta0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range rel {
		if err := w.WriteStep(i, rel[i], mem[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.WriteStep(5, rel[0], nil); err == nil {
		t.Fatal("out-of-order step accepted")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return h, theta0, rel, mem
}

func TestTranscriptRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.dpft")
	h, theta0, rel, mem := writeTestTranscript(t, path)
	tr, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if !tr.Complete || len(tr.Steps) != 3 || !reflect.DeepEqual(tr.Theta0, theta0) {
		t.Fatalf("complete %v, %d steps, θ₀ %v", tr.Complete, len(tr.Steps), tr.Theta0)
	}
	h.Format, h.ClipMode = "dpfil-transcript", "hard"
	if !reflect.DeepEqual(tr.Header, h) {
		t.Fatalf("header %+v, want %+v", tr.Header, h)
	}
	for i, s := range tr.Steps {
		for j, v := range s.Released {
			if float64(v) != rel[i][j] {
				t.Fatalf("step %d value %d: %v, want %v", i, j, v, rel[i][j])
			}
		}
		if !reflect.DeepEqual(s.KnownMember, mem[i]) {
			t.Fatalf("step %d membership %v, want %v", i, s.KnownMember, mem[i])
		}
	}
}

func TestTranscriptDamage(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.dpft")
	writeTestTranscript(t, path)
	full, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// layout: 8 magic, header record, init record (5+20+4), 3 step records, index, trailer
	stepLen := 5 + (12 + 4*5 + 1) + 4
	indexLen := 5 + 4 + 3*8 + 4
	stepsEnd := len(full) - 16 - indexLen
	for _, tc := range []struct {
		name      string
		data      func() []byte
		wantSteps int    // for recoverable damage
		wantErr   string // for rejected damage
	}{
		{"crash after step 2 (no index)", func() []byte { return full[:stepsEnd] }, 3, ""},
		{"torn step 3", func() []byte { return full[:stepsEnd-stepLen/2] }, 2, ""},
		{"torn index", func() []byte { return full[:stepsEnd+7] }, 3, ""},
		{"last step checksum torn", func() []byte {
			b := append([]byte(nil), full[:stepsEnd]...)
			b[len(b)-6] ^= 0x40
			return b
		}, 2, ""},
		{"flipped bit in step 2 (complete file)", func() []byte {
			b := append([]byte(nil), full...)
			b[stepsEnd-stepLen-10] ^= 1
			return b
		}, 0, "checksum"},
		{"flipped bit in step 1 (crashed file)", func() []byte {
			b := append([]byte(nil), full[:stepsEnd]...)
			b[stepsEnd-2*stepLen-10] ^= 1
			return b
		}, 0, "checksum"},
		{"flipped bit in header", func() []byte {
			b := append([]byte(nil), full...)
			b[20] ^= 1
			return b
		}, 0, "checksum"},
		{"bad index offset", func() []byte {
			b := append([]byte(nil), full...)
			b[len(b)-16] ^= 1
			return b
		}, 0, "index"},
		{"bad magic", func() []byte {
			b := append([]byte(nil), full...)
			b[0] = 'X'
			return b
		}, 0, "magic"},
		{"empty", func() []byte { return nil }, 0, "magic"},
		{"header only, truncated", func() []byte { return full[:30] }, 0, "header"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_"))
			if err := os.WriteFile(p, tc.data(), 0o644); err != nil {
				t.Fatal(err)
			}
			tr, err := Open(p)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one mentioning %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tr.Complete || len(tr.Steps) != tc.wantSteps {
				t.Fatalf("complete %v with %d steps, want incomplete with %d", tr.Complete, len(tr.Steps), tc.wantSteps)
			}
		})
	}
}

func TestTranscriptWriterRejects(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.dpft")
	h := Header{Model: "test", NumParams: 2, Known: []int{1}, Steps: 1, Q: 1, Sigma: 1, Clip: 1, LR: 1, BatchDenominator: 2}
	if _, err := Create(path, h, []float32{1}); err == nil {
		t.Fatal("θ₀ of the wrong length accepted")
	}
	w, err := Create(path, h, []float32{1, 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		g    []float64
		mem  []bool
	}{
		{"NaN", []float64{math.NaN(), 0}, nil},
		{"overflow", []float64{1e300, 0}, nil},
		{"short", []float64{1}, nil},
		{"membership length", []float64{1, 2}, []bool{true, false}},
	} {
		if err := w.WriteStep(0, tc.g, tc.mem); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}
