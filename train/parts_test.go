package train

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dpfil/dpfil/accounting"
)

func TestValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("default config: %v", err)
	}
	cases := []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"unknown-model", func(c *Config) { c.Model = "resnet" }, "unknown model"},
		{"no-steps", func(c *Config) { c.Steps = 0 }, "steps or epochs"},
		{"both", func(c *Config) { c.Epochs = 1 }, "not both"},
		{"neg-steps", func(c *Config) { c.Steps = -1 }, "steps"},
		{"nan-epochs", func(c *Config) { c.Steps, c.Epochs = 0, math.NaN() }, "epochs"},
		{"batch0", func(c *Config) { c.Batch = 0 }, "batch"},
		{"lr0", func(c *Config) { c.LR = 0 }, "lr"},
		{"lr-inf", func(c *Config) { c.LR = math.Inf(1) }, "lr"},
		{"momentum1", func(c *Config) { c.Momentum = 1 }, "momentum"},
		{"wd-neg", func(c *Config) { c.WeightDecay = -1 }, "weight_decay"},
		{"sigma-neg", func(c *Config) { c.Sigma = -0.1 }, "sigma"},
		{"sigma-nan", func(c *Config) { c.Sigma = math.NaN() }, "sigma"},
		{"clip0", func(c *Config) { c.Clip = 0 }, "clip"},
		{"clip-neg", func(c *Config) { c.Clip = -1 }, "clip"},
		{"clip-mode", func(c *Config) { c.ClipMode = "soft" }, "clip_mode"},
		{"sampling", func(c *Config) { c.Sampling = "random" }, "sampling"},
		{"delta0", func(c *Config) { c.Delta = 0 }, "delta"},
		{"delta1", func(c *Config) { c.Delta = 1 }, "delta"},
		{"fil-delta", func(c *Config) { c.FILDelta = 2 }, "fil_delta"},
		{"fil-coords", func(c *Config) { c.FILCoords = -1 }, "fil_coords"},
		{"fil-no-noise", func(c *Config) { c.Sigma = 0 }, "infinite"},
		{"repeats", func(c *Config) { c.Repeats = 0 }, "repeats"},
		{"eval", func(c *Config) { c.EvalEvery = -2 }, "eval_every"},
		{"subset", func(c *Config) { c.TrainSubset = -2 }, "train_subset"},
		{"device", func(c *Config) { c.Device = "tpu" }, "device"},
		{"dataset", func(c *Config) { c.Dataset = "" }, "dataset"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.mod(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
	// σ = 0 is fine without FIL.
	c := DefaultConfig()
	c.Sigma, c.FILCoords = 0, 0
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestHash(t *testing.T) {
	a := DefaultConfig()
	if h := a.Hash(); len(h) != 16 || h != DefaultConfig().Hash() {
		t.Fatalf("hash %q not stable/16 hex", h)
	}
	b := a
	b.DataDir = "/somewhere"
	if b.Hash() != a.Hash() {
		t.Fatal("data_dir must not change the hash")
	}
	seen := map[string]string{a.Hash(): "default"}
	for name, mod := range map[string]func(*Config){
		"sigma": func(c *Config) { c.Sigma = 2 }, "seed": func(c *Config) { c.Seed = 2 },
		"sampling": func(c *Config) { c.Sampling = SamplingShuffle }, "uniform": func(c *Config) { c.Sampling = SamplingUniform },
		"accountant": func(c *Config) { c.Accountant = AccountantRDP }, "fil": func(c *Config) { c.FILExact = true },
		"lr": func(c *Config) { c.LR = 0.01 }, "model": func(c *Config) { c.Model = "mlp" },
	} {
		c := DefaultConfig()
		mod(&c)
		if prev, ok := seen[c.Hash()]; ok {
			t.Fatalf("%s and %s share hash %s", name, prev, c.Hash())
		}
		seen[c.Hash()] = name
	}
}

func TestResolveSteps(t *testing.T) {
	c := DefaultConfig()
	c.Steps, c.Epochs, c.Batch = 0, 2.5, 600
	if got := c.ResolveSteps(8000); got != 34 { // ceil(2.5·8000/600) = ceil(33.33)
		t.Fatalf("steps %d, want 34", got)
	}
	c.Steps, c.Epochs = 7, 0
	if got := c.ResolveSteps(8000); got != 7 {
		t.Fatalf("steps %d, want 7", got)
	}
}

func TestShuffleSampler(t *testing.T) {
	const n, b = 23, 5
	s, err := newShuffleSampler(n, b, newRNG(newStream(1, 0, streamSampler)))
	if err != nil {
		t.Fatal(err)
	}
	perEpoch := n / b
	for epoch := 0; epoch < 4; epoch++ {
		seen := map[int]bool{}
		for i := 0; i < perEpoch; i++ {
			batch := s.next()
			if len(batch) != b {
				t.Fatalf("batch of %d, want %d", len(batch), b)
			}
			for _, j := range batch {
				if j < 0 || j >= n || seen[j] {
					t.Fatalf("epoch %d: index %d out of range or repeated", epoch, j)
				}
				seen[j] = true
			}
		}
	}
	if s.epoch != 4 {
		t.Fatalf("epochs drawn %d, want 4", s.epoch)
	}
	if _, err := newShuffleSampler(3, 4, newRNG(newStream(1, 0, 1))); err == nil {
		t.Fatal("batch > N must fail")
	}
}

func TestPoissonSampler(t *testing.T) {
	const n, b, steps = 1000, 50, 400
	s, err := newPoissonSampler(n, b, newRNG(newStream(2, 0, streamSampler)))
	if err != nil {
		t.Fatal(err)
	}
	total, counts := 0, make([]int, n)
	for i := 0; i < steps; i++ {
		batch := s.next()
		if !slices.IsSorted(batch) {
			t.Fatal("poisson batch not sorted")
		}
		total += len(batch)
		for _, j := range batch {
			counts[j]++
		}
	}
	// E[total] = steps·b = 20000, sd = sqrt(steps·n·q(1−q)) ≈ 138.
	if math.Abs(float64(total)-steps*b) > 5*138 {
		t.Fatalf("total batch samples %d, want ≈ %d", total, steps*b)
	}
	// Tiny q: empty batches occur and are returned as empty.
	s2, _ := newPoissonSampler(100, 1, newRNG(newStream(3, 0, streamSampler)))
	empty := 0
	for i := 0; i < 200; i++ {
		if len(s2.next()) == 0 {
			empty++
		}
	}
	if empty == 0 { // P(empty) = 0.99^100 ≈ 0.37
		t.Fatal("no empty batch in 200 Poisson draws with q = 0.01")
	}
}

// TestUniformSampler: every batch holds B distinct indices; over many steps each
// index is drawn with probability B/N per step, and each pair of indices with
// probability B(B−1)/(N(N−1)) (what a uniform B-subset gives, unlike a shuffle).
func TestUniformSampler(t *testing.T) {
	const n, b, steps = 20, 5, 40000
	s, err := newUniformSampler(n, b, newRNG(newStream(4, 0, streamSampler)))
	if err != nil {
		t.Fatal(err)
	}
	counts := make([]int, n)
	pair := 0 // batches holding both 0 and 1
	for i := 0; i < steps; i++ {
		batch := s.next()
		seen := map[int]bool{}
		for _, j := range batch {
			if seen[j] || j < 0 || j >= n {
				t.Fatalf("batch %v: repeated or invalid index", batch)
			}
			seen[j] = true
			counts[j]++
		}
		if len(batch) != b {
			t.Fatalf("batch of %d, want %d", len(batch), b)
		}
		if seen[0] && seen[1] {
			pair++
		}
	}
	// Per index: Binomial(steps, 1/4): mean 10000, sd ≈ 87.
	for j, c := range counts {
		if math.Abs(float64(c)-steps*float64(b)/n) > 5*87 {
			t.Errorf("index %d drawn %d times, want ≈ %d", j, c, steps*b/n)
		}
	}
	// Pair: p = 5·4/(20·19) = 1/19, mean ≈ 2105, sd ≈ 45.
	if want := float64(steps) * b * (b - 1) / (n * (n - 1)); math.Abs(float64(pair)-want) > 5*45 {
		t.Errorf("pair drawn together %d times, want ≈ %v", pair, want)
	}
	if _, err := newUniformSampler(3, 4, newRNG(newStream(1, 0, 1))); err == nil {
		t.Error("batch > N: want an error")
	}
}

// TestSamplerStateRestore: a sampler restored from a snapshot continues exactly as the
// original.
func TestSamplerStateRestore(t *testing.T) {
	for _, kind := range []string{SamplingShuffle, SamplingPoisson, SamplingUniform} {
		a, _ := newSampler(kind, 17, 4, newRNG(newStream(5, 1, streamSampler)))
		for i := 0; i < 6; i++ {
			a.next()
		}
		st, err := a.state()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := newSampler(kind, 17, 4, newRNG(newStream(99, 0, streamSampler)))
		if err := b.restore(st); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 10; i++ {
			if x, y := a.next(), b.next(); !slices.Equal(x, y) {
				t.Fatalf("%s: step %d after restore: %v vs %v", kind, i, x, y)
			}
		}
		other := SamplingPoisson
		if kind == SamplingPoisson {
			other = SamplingUniform
		}
		c, _ := newSampler(other, 17, 4, newRNG(newStream(1, 0, 1)))
		if err := c.restore(st); err == nil {
			t.Fatalf("restoring a %s state into a %s sampler must fail", kind, other)
		}
	}
}

func TestDeriveSeedDistinct(t *testing.T) {
	seen := map[uint64]bool{}
	for root := uint64(0); root < 20; root++ {
		for r := 0; r < 10; r++ {
			for s := streamInit; s <= streamNoise; s++ {
				v := deriveSeed(root, r, s)
				if seen[v] {
					t.Fatalf("seed collision at root %d repeat %d stream %d", root, r, s)
				}
				seen[v] = true
			}
		}
	}
}

func TestMomentumSGD(t *testing.T) {
	o := newMomentumSGD(0.1, 0.5, 0.01, 2)
	w := []float64{1, -2}
	o.step(w, []float64{0.5, 1})
	// g = (0.5+0.01, 1−0.02) = (0.51, 0.98); v = g; w = (1−0.051, −2−0.098)
	want := []float64{0.949, -2.098}
	for i := range w {
		if math.Abs(w[i]-want[i]) > 1e-15 {
			t.Fatalf("step 1: w %v, want %v", w, want)
		}
	}
	o.step(w, []float64{0, 0})
	// g = 0.01·w; v = 0.5·v + g
	v0 := 0.5*0.51 + 0.01*0.949
	v1 := 0.5*0.98 + 0.01*-2.098
	want = []float64{0.949 - 0.1*v0, -2.098 - 0.1*v1}
	for i := range w {
		if math.Abs(w[i]-want[i]) > 1e-15 {
			t.Fatalf("step 2: w %v, want %v", w, want)
		}
	}
}

func TestCheckpointRoundTripAndCorruption(t *testing.T) {
	fil, _ := accounting.NewFIL(3, 2, 0.5)
	_ = fil.AddStep([]int{1}, []float64{4})
	cfg := DefaultConfig()
	ck := &checkpoint{Config: cfg, ConfigHash: cfg.Hash(), Repeat: 0, Wall: 1.5,
		Cur: &repeatState{Step: 3, Params: []float64{1, math.Inf(1)}, Velocity: []float64{0, 1}, FIL: fil,
			Sampler: samplerState{Kind: SamplingShuffle, Perm: []int32{2, 0, 1}, Pos: 1}}}
	dir := t.TempDir()
	if err := saveCheckpoint(dir, ck); err != nil {
		t.Fatal(err)
	}
	got, err := loadCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got.Cur.Step != 3 || !math.IsInf(got.Cur.Params[1], 1) || got.Cur.FIL.Sum[1] != 1 || !slices.Equal(got.Cur.Sampler.Perm, []int32{2, 0, 1}) {
		t.Fatalf("round trip: %+v", got.Cur)
	}
	path := filepath.Join(dir, CheckpointFile)
	raw, _ := os.ReadFile(path)
	for name, bad := range map[string][]byte{
		"flipped":   func() []byte { b := slices.Clone(raw); b[len(b)-3] ^= 1; return b }(),
		"truncated": raw[:len(raw)/2],
		"magic":     append([]byte("NOTACKPT"), raw[8:]...),
		"empty":     {},
	} {
		if err := os.WriteFile(path, bad, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := loadCheckpoint(dir); err == nil {
			t.Fatalf("%s checkpoint accepted", name)
		}
	}
	if ck, err := loadCheckpoint(t.TempDir()); ck != nil || err != nil {
		t.Fatalf("missing checkpoint: %v %v", ck, err)
	}
}

func TestParamsNPYRoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, 7, 26010} {
		p := make([]float32, n)
		for i := range p {
			p[i] = float32(i)*0.25 - 3
		}
		path := filepath.Join(t.TempDir(), fmt.Sprintf("p%d.npy", n))
		if err := SaveParams(path, p); err != nil {
			t.Fatal(err)
		}
		raw, _ := os.ReadFile(path)
		hl := int(raw[8]) | int(raw[9])<<8
		if (10+hl)%64 != 0 || raw[10+hl-1] != '\n' {
			t.Fatalf("npy header length %d not 64-aligned", hl)
		}
		got, err := LoadParams(path)
		if err != nil || !slices.Equal(got, p) {
			t.Fatalf("round trip of %d values: %v", n, err)
		}
		if err := os.WriteFile(path, raw[:len(raw)-1], 0o644); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			if _, err := LoadParams(path); err == nil {
				t.Fatal("truncated npy accepted")
			}
		}
	}
}

func TestResultJSONInfinities(t *testing.T) {
	r := Result{Config: DefaultConfig(), Epsilon: math.Inf(1), RDPOrder2: 2, MSEBoundFILMax: math.Inf(1), MSEBoundFILMedian: 3, EpsilonOrder: math.NaN()}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"epsilon":null`) || !strings.Contains(string(b), `"mse_bound_fil_median":3`) {
		t.Fatalf("json: %s", b)
	}
	var back Result
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !math.IsInf(back.Epsilon, 1) || back.RDPOrder2 != 2 || back.MSEBoundFILMedian != 3 || back.Config != r.Config {
		t.Fatalf("round trip: %+v", back)
	}
}
