package train

import (
	"context"
	"strings"
	"testing"

	"github.com/dpfil/dpfil/data"
)

// publicSplit returns the public and private parts pretrain_public = frac makes of
// split's training set under cfg (prepare's own split).
func publicSplit(t *testing.T, cfg Config, split *data.Split, frac float64) (pub, priv *data.Dataset) {
	t.Helper()
	cfg.Tuning = TuningConfig{PretrainPublic: frac, PretrainSteps: 1}
	s, err := prepare(cfg, Options{Model: smallNet(t), Data: split}, func(string, ...any) {})
	if err != nil {
		t.Fatal(err)
	}
	return s.tune.public, s.train
}

// A run given the public data through Options.Public and only the private samples
// as its training set is bit-identical to the run whose pretrain_public split made
// the same two parts (pretraining, pruning, g_φ and learned noise read the public
// data the same way), and its result says the public data was the caller's and
// every training sample private.
func TestExternalPublicMatchesSplit(t *testing.T) {
	split := toyData(120, 30, 6, 3, 4)
	pub, priv := publicSplit(t, tuningConfig(), split, 0.5)
	if pub.N != 60 || priv.N != 60 {
		t.Fatalf("split %d/%d", pub.N, priv.N)
	}
	for _, tc := range []struct {
		name string
		tune TuningConfig
	}{
		{"pretrain+prune+g_φ", TuningConfig{PretrainSteps: 10, PruneFraction: 0.3, PerturbNet: true, PerturbSteps: 2, PerturbBatch: 8, PerturbHidden: 4, PerturbLambda: 10}},
		{"g_φ without pretraining", TuningConfig{PretrainSteps: -1, PerturbNet: true, PerturbSteps: 2, PerturbBatch: 8, PerturbHidden: 4}},
		{"learned noise", TuningConfig{PretrainSteps: 5, NoiseRank: 3, NoiseSamples: 12}},
		{"default pretraining", TuningConfig{PruneFraction: 0.2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tuningConfig()
			cfg.Tuning = tc.tune
			cfg.Tuning.PretrainPublic = 0.5
			ref, err := Run(context.Background(), cfg, Options{Model: smallNet(t), Data: split})
			if err != nil {
				t.Fatal(err)
			}
			cfg.Tuning.PretrainPublic = 0
			got, err := Run(context.Background(), cfg, Options{Model: smallNet(t), Data: &data.Split{Train: priv, Test: split.Test}, Public: pub})
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range ref.Repeats[0].Params {
				if got.Repeats[0].Params[i] != v {
					t.Fatalf("parameter %d: %v with Options.Public, %v with the split", i, got.Repeats[0].Params[i], v)
				}
			}
			if got.Epsilon != ref.Epsilon || got.Repeats[0].DFILMax != ref.Repeats[0].DFILMax || !(got.Repeats[0].DFILMax > 0) {
				t.Fatalf("ε %v dFIL max %v, split %v %v", got.Epsilon, got.Repeats[0].DFILMax, ref.Epsilon, ref.Repeats[0].DFILMax)
			}
			tr := got.Tuning
			if tr == nil || !tr.PublicExternal || tr.PublicSHA256 != pub.Fingerprint() || tr.NPublic != 60 || tr.NPrivate != 60 || got.Dataset.NTrain != 60 {
				t.Fatalf("tuning %+v, n_train %d", tr, got.Dataset.NTrain)
			}
			if tr.PretrainSteps != ref.Tuning.PretrainSteps || tr.PretrainAccuracy != ref.Tuning.PretrainAccuracy || tr.Frozen != ref.Tuning.Frozen {
				t.Fatalf("tuning %+v, split %+v", tr, ref.Tuning)
			}
			if !got.Config.Tuning.PublicExternal || ref.Config.Tuning.PublicExternal || ref.Tuning.PublicExternal || got.Config.Hash() == ref.Config.Hash() {
				t.Fatalf("config public_external: %v (split: %v), hashes %s %s", got.Config.Tuning.PublicExternal, ref.Config.Tuning.PublicExternal, got.Config.Hash(), ref.Config.Hash())
			}
			var text strings.Builder
			got.writeTuning(&text)
			if !strings.Contains(text.String(), "given by the caller") {
				t.Errorf("text summary %q does not say the public data was the caller's", text.String())
			}
		})
	}
}

// Options.Public misused is refused before training, with errors that name the
// problem.
func TestExternalPublicErrors(t *testing.T) {
	split := toyData(40, 10, 6, 3, 4)
	pub := toyData(20, 1, 6, 3, 5).Train
	wide := toyData(20, 1, 7, 3, 5).Train
	fewer := toyData(20, 1, 6, 2, 5).Train
	empty := &data.Dataset{Name: "empty", C: 1, H: 1, W: 6, Classes: 3}
	badLabel := toyData(20, 1, 6, 3, 5).Train
	badLabel.Labels[3] = 7
	g := TuningConfig{PerturbNet: true, PerturbSteps: 1}
	for _, tc := range []struct {
		name string
		tune TuningConfig
		pub  *data.Dataset
		want string
	}{
		{"with pretrain_public", TuningConfig{PretrainPublic: 0.5, PerturbNet: true}, pub, "use one of the two"},
		{"shape", g, wide, "shape 1x1x7"},
		{"classes", g, fewer, "2 classes"},
		{"empty", g, empty, "empty"},
		{"label", g, badLabel, "label 7"},
		{"unused", TuningConfig{PretrainSteps: -1, PruneFraction: 0.3}, pub, "nothing reads it"},
		{"no tuning", TuningConfig{PretrainSteps: -1}, pub, "nothing reads it"},
		{"flag without data", TuningConfig{PublicExternal: true, PerturbNet: true}, nil, "Options.Public is nil"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tuningConfig()
			cfg.Tuning = tc.tune
			_, err := Run(context.Background(), cfg, Options{Model: smallNet(t), Data: split, Public: tc.pub})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to mention %q", err, tc.want)
			}
		})
	}
	// Without public data g_φ is still refused, naming both ways to give it.
	cfg := tuningConfig()
	cfg.Tuning = g
	if _, err := Run(context.Background(), cfg, Options{Model: smallNet(t), Data: split}); err == nil || !strings.Contains(err.Error(), "Options.Public") {
		t.Fatalf("g_φ without public data: %v", err)
	}
}

// A run with Options.Public resumes bit-identically with the same public data and
// refuses other public data (the checkpoint holds its fingerprint).
func TestExternalPublicResume(t *testing.T) {
	split := imageToyData(60, 20, 4)
	pub := imageToyData(24, 1, 5).Train
	cfg := DefaultConfig()
	cfg.Model, cfg.Dataset, cfg.Batch, cfg.Steps, cfg.Repeats, cfg.FILCoords, cfg.Sigma = "mlp", "toy", 8, 6, 1, 2, 0.9
	cfg.Tuning = TuningConfig{PretrainSteps: 3, PruneFraction: 0.3, PerturbNet: true, PerturbSteps: 1, PerturbBatch: 8, PerturbHidden: 4}
	full := t.TempDir()
	if _, err := Run(context.Background(), cfg, Options{Out: full, Data: split, Public: pub}); err != nil {
		t.Fatal(err)
	}
	killed := runKilledAt(t, cfg, Options{Data: split, Public: pub, CheckpointEvery: 2}, 3)
	other := imageToyData(24, 1, 6).Train
	if _, err := Run(context.Background(), cfg, Options{Out: killed, Data: split, Public: other, Resume: true}); err == nil || !strings.Contains(err.Error(), "other public data") {
		t.Fatalf("resume with other public data: %v", err)
	}
	if _, err := Run(context.Background(), cfg, Options{Out: killed, Data: split, Resume: true}); err == nil {
		t.Fatal("resume without the public data succeeded")
	}
	if _, err := Run(context.Background(), cfg, Options{Out: killed, Data: split, Public: pub, Resume: true}); err != nil {
		t.Fatal(err)
	}
	if a, b := readComparable(t, full), readComparable(t, killed); string(a) != string(b) {
		t.Fatalf("resumed result differs:\n%s\nvs\n%s", a, b)
	}
	if _, err := Run(context.Background(), cfg, Options{Out: full, Data: split, Public: other, Resume: true}); err == nil || !strings.Contains(err.Error(), "other public data") {
		t.Fatalf("finished run with other public data: %v", err)
	}
}
