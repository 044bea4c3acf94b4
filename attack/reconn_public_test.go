package attack

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/dpfil/dpfil/train"
)

// The public pool is drawn from the samples after D₋, disjoint from D₋ and the prior
// pool, of the asked sizes, fixed by the seed; without one the splits are the
// original consecutive ranges; sizes that do not fit are refused.
func TestRecoNNIndices(t *testing.T) {
	for _, tc := range []struct {
		n, fixed, pool, public int
		wantPool               int
		err                    string
	}{
		{n: 20, fixed: 5, pool: 0, public: 0, wantPool: 15},
		{n: 20, fixed: 5, pool: 40, public: 0, wantPool: 15}, // no public pool: cut to the rest, as before
		{n: 20, fixed: 5, pool: 4, public: 0, wantPool: 4},
		{n: 20, fixed: 5, pool: 0, public: 6, wantPool: 9},
		{n: 20, fixed: 5, pool: 4, public: 6, wantPool: 4},
		{n: 20, fixed: 5, pool: 9, public: 6, wantPool: 9},
		{n: 20, fixed: 5, pool: 10, public: 6, err: "exceed the 20 training samples"},
		{n: 20, fixed: 5, pool: 0, public: 15, err: "leave no prior pool"},
		{n: 20, fixed: 20, pool: 0, public: 0, err: "leaves no pool"},
		{n: 20, fixed: 5, pool: 0, public: -1, err: "≥ 0"},
	} {
		fixed, pool, public, err := recoNNIndices(tc.n, tc.fixed, tc.pool, tc.public, 3)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%+v: error %v, want %q", tc, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%+v: %v", tc, err)
		}
		if !slices.Equal(fixed, indexRange(0, tc.fixed)) || len(pool) != tc.wantPool || len(public) != tc.public {
			t.Fatalf("%+v: fixed %v, pool %v, public %v", tc, fixed, pool, public)
		}
		if tc.public == 0 && !slices.Equal(pool, indexRange(tc.fixed, tc.wantPool)) {
			t.Errorf("%+v: pool %v, want the samples after D₋ in order", tc, pool)
		}
		seen := map[int]int{}
		for _, set := range [][]int{fixed, pool, public} {
			for _, i := range set {
				if i < 0 || i >= tc.n {
					t.Fatalf("%+v: index %d outside [0, %d)", tc, i, tc.n)
				}
				seen[i]++
			}
		}
		for i, c := range seen {
			if c > 1 {
				t.Fatalf("%+v: index %d in %d sets (fixed %v, pool %v, public %v)", tc, i, c, fixed, pool, public)
			}
		}
		if !disjointIndices(fixed, pool, public) {
			t.Errorf("%+v: disjointIndices says the sets overlap", tc)
		}
		_, pool2, public2, _ := recoNNIndices(tc.n, tc.fixed, tc.pool, tc.public, 3)
		if !slices.Equal(pool, pool2) || !slices.Equal(public, public2) {
			t.Errorf("%+v: not fixed by the seed", tc)
		}
	}
	if disjointIndices([]int{1, 2}, []int{3}, []int{2}) {
		t.Error("disjointIndices missed a shared index")
	}
	// Another seed draws another public pool.
	_, _, a, _ := recoNNIndices(1000, 10, 0, 50, 1)
	_, _, b, _ := recoNNIndices(1000, 10, 0, 50, 2)
	if slices.Equal(a, b) {
		t.Error("seeds 1 and 2 drew the same public pool")
	}
}

// publicRecipe is a tiny FIM recipe (pruning and g_φ, no pretraining).
func publicRecipe() train.Config {
	cfg := reconnRecipe()
	cfg.Model, cfg.Steps, cfg.FILCoords = "linear", 2, 0
	cfg.Tuning = train.TuningConfig{PretrainSteps: -1, PruneFraction: 0.5, PerturbNet: true, PerturbSteps: 1, PerturbBatch: 4, PerturbHidden: 4}
	return cfg
}

// RecoNN with a fixed public pool trains every model with it (g_φ trained on other
// public data gives other shadows), on the engine trainer (auto picks it, batched is
// refused), and its shadow checkpoint resumes and is tied to the public pool.
func TestRecoNNPublicPool(t *testing.T) {
	fixed, pool, targets := reconnToy(5, 1), reconnToy(8, 2), reconnToy(1, 3)
	pubA, pubB := reconnToy(6, 4), reconnToy(6, 5)
	opts := func(pub []int, ck string, m int) RecoNNOptions {
		o := RecoNNOptions{Config: publicRecipe(), Fixed: fixed, Pool: pool, Targets: targets, Shadows: m, SameInit: true,
			Reconstructor: "ridge", Checkpoint: ck, Seed: 7}
		switch {
		case pub == nil:
		case pub[0] == 0:
			o.Public = pubA
		default:
			o.Public = pubB
		}
		return o
	}
	a, b := []int{0}, []int{1}
	ck := t.TempDir() + "/shadows.bin"
	first, err := RunRecoNN(context.Background(), opts(a, ck, 3))
	if err != nil {
		t.Fatal(err)
	}
	if first.ShadowTrainer != ShadowTrainerEngine || first.ShadowsTrained != 3 {
		t.Fatalf("trainer %q, %d trained", first.ShadowTrainer, first.ShadowsTrained)
	}
	grown, err := RunRecoNN(context.Background(), opts(a, ck, 4))
	if err != nil {
		t.Fatal(err)
	}
	if grown.ShadowsLoaded != 3 || grown.ShadowsTrained != 1 {
		t.Fatalf("extended checkpoint: %d loaded, %d trained", grown.ShadowsLoaded, grown.ShadowsTrained)
	}
	fresh, err := RunRecoNN(context.Background(), opts(a, "", 4))
	if err != nil {
		t.Fatal(err)
	}
	if fresh.TrainMSE != grown.TrainMSE || fresh.Targets[0].MSE != grown.Targets[0].MSE {
		t.Errorf("resumed run differs from a fresh one: train MSE %v / %v, target %v / %v", grown.TrainMSE, fresh.TrainMSE, grown.Targets[0].MSE, fresh.Targets[0].MSE)
	}
	if _, err := RunRecoNN(context.Background(), opts(b, ck, 4)); err == nil || !strings.Contains(err.Error(), "another experiment") {
		t.Errorf("checkpoint of another public pool: %v", err)
	}
	other, err := RunRecoNN(context.Background(), opts(b, "", 4))
	if err != nil {
		t.Fatal(err)
	}
	if other.TrainMSE == fresh.TrainMSE && other.Targets[0].MSE == fresh.Targets[0].MSE {
		t.Error("another public pool changed nothing: the models did not get it")
	}
	o := opts(a, "", 4)
	o.Trainer = ShadowTrainerBatched
	if _, err := RunRecoNN(context.Background(), o); err == nil || !strings.Contains(err.Error(), "batched does not train with a public pool") {
		t.Errorf("batched trainer with a public pool: %v", err)
	}
	if _, err := RunRecoNN(context.Background(), opts(nil, "", 4)); err == nil || !strings.Contains(err.Error(), "give a fixed public pool") {
		t.Errorf("g_φ without a public pool: %v", err)
	}
	o = opts(a, "", 4)
	o.Public = reconnToy(6, 4)
	o.Public.Classes = 3
	if _, err := RunRecoNN(context.Background(), o); err == nil || !strings.Contains(err.Error(), "shaped as D₋") {
		t.Errorf("public pool of another shape: %v", err)
	}
}

// The shadow checkpoint key of an experiment without a public pool is the one the
// format had before public pools (existing checkpoints stay valid).
func TestShadowKeyWithoutPublicUnchanged(t *testing.T) {
	fixed, pool := reconnToy(5, 1), reconnToy(8, 2)
	o := RecoNNOptions{Config: reconnRecipe(), Fixed: fixed, Pool: pool, SameInit: true, Seed: 9}
	got, err := shadowKey(&o, ShadowTrainerBatched)
	if err != nil {
		t.Fatal(err)
	}
	cfg := o.Config
	cfg.FILCoords, cfg.FILExact, cfg.Accountant, cfg.EvalEvery = 0, false, "", 0
	b, err := json.Marshal(struct {
		Config                  train.Config
		Fixed, Pool             string
		FixedN, PoolN           int
		SameInit                bool
		Seed                    uint64
		Trainer                 string
		FeatureRounding, Labels string
		Version                 int
	}{cfg, fixed.Fingerprint(), pool.Fingerprint(), fixed.N, pool.N, true, 9, ShadowTrainerBatched, "float32", "one-hot", 1})
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256(b)
	if want := hex.EncodeToString(h[:16]); got != want {
		t.Fatalf("key %s, the format's %s", got, want)
	}
	o.Public = reconnToy(3, 4)
	withPub, err := shadowKey(&o, ShadowTrainerEngine)
	if err != nil {
		t.Fatal(err)
	}
	o.Public = reconnToy(3, 5)
	if other, _ := shadowKey(&o, ShadowTrainerEngine); other == withPub {
		t.Fatal("the key ignores the public pool")
	}
}
