package attack

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/dpfil/dpfil/transcript"
)

// A transcript recorded by the game, replayed by the adversary from the file alone
// (plus D₋ and the prior), gives the same guesses as the game's in-memory attack.
func TestTranscriptReplayMatchesGame(t *testing.T) {
	for _, q := range []float64{1, 0.5} {
		cfg := smallConfig()
		cfg.Sigma, cfg.Q = 0.7, q
		m, _ := NewMLP(20, 6, 3)
		pool := synthPool(400, 20, 3, 5)
		g, err := NewGame(cfg, pool, func() Net { return m }, m.Init)
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		res, err := g.Run(context.Background(), RunOptions{Trials: 6, Workers: 2,
			Record: g.TranscriptRecorder(dir, transcript.Header{Model: "test-mlp"})})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			tr, err := transcript.Open(filepath.Join(dir, fmt.Sprintf("trial-%06d.dpft", r.Trial)))
			if err != nil {
				t.Fatal(err)
			}
			if !tr.Complete || len(tr.Steps) != cfg.Steps || !reflect.DeepEqual(tr.Header.Prior, r.Prior) {
				t.Fatalf("trial %d transcript: complete %v, %d steps, prior %v", r.Trial, tr.Complete, len(tr.Steps), tr.Header.Prior)
			}
			var kx []float64
			var ky []int
			for _, i := range tr.Header.Known {
				kx = pool.AppendImages(kx, i, i+1)
				ky = append(ky, pool.Y[i])
			}
			obs, err := Observations(tr, m, kx, ky)
			if err != nil {
				t.Fatal(err)
			}
			var px []float64
			var py []int
			for _, i := range tr.Header.Prior {
				px = pool.AppendImages(px, i, i+1)
				py = append(py, pool.Y[i])
			}
			sc, err := PriorScores(m, obs, px, py, tr.Header.Clip)
			if err != nil {
				t.Fatal(err)
			}
			guess, err := Decide(sc, tr.Header.Q, tr.Header.Sigma)
			if err != nil {
				t.Fatal(err)
			}
			for a, gi := range guess {
				if gi != r.Guess[a] {
					t.Errorf("q = %v trial %d %s: replay guessed %d, game %d", q, r.Trial, a, gi, r.Guess[a])
				}
			}
			// ḡ_T−1 from the replay matches the game's up to float32 storage
			if n := len(obs); n != cfg.Steps || math.IsNaN(obs[n-1].GBar[0]) {
				t.Fatalf("replay gave %d observations", n)
			}
		}
	}
}

func TestDecideRejectsRaggedScores(t *testing.T) {
	if _, err := Decide(Scores{Dot: [][]float64{{1, 2}, {1}}, NormSq: [][]float64{{1, 1}, {1}}}, 1, 1); err == nil {
		t.Error("ragged scores accepted")
	}
}

// The known-point subtraction of Observations assumes hard clipping: a training
// transcript recorded with smooth clipping and known points is refused.
func TestObservationsRefuseSmoothClipping(t *testing.T) {
	tr := &transcript.Transcript{Header: transcript.Header{Model: "test", NumParams: 3, ClipMode: "smooth", Known: []int{1}},
		Theta0: []float32{1, 0.5, -1}}
	if _, err := Observations(tr, nil, nil, nil); err == nil || !strings.Contains(err.Error(), "clipping") {
		t.Fatalf("Observations on a smooth-clipped transcript with known points: %v", err)
	}
}
