package cli

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpfil/dpfil/accounting"
	"github.com/dpfil/dpfil/train/fil"
)

// runAccount runs 'dpfil account …' and returns stdout, stderr and the error.
func runAccount(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	return execCLI(t, append([]string{"account"}, args...)...)
}

// accountJSON runs a command with --json and decodes its single JSON object.
func accountJSON(t *testing.T, args ...string) map[string]any {
	t.Helper()
	out, _, err := runAccount(t, append(args, "--json")...)
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	dec := json.NewDecoder(strings.NewReader(out))
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("%v: decode %q: %v", args, out, err)
	}
	if dec.More() {
		t.Fatalf("%v: more than one JSON value on stdout: %q", args, out)
	}
	return m
}

func acctNum(t *testing.T, m map[string]any, k string) float64 {
	t.Helper()
	v, ok := m[k].(float64)
	if !ok {
		t.Fatalf("key %q missing or not a number in %v", k, m)
	}
	return v
}

func TestAccountRDP(t *testing.T) {
	m := accountJSON(t, "rdp", "--q", "0.01", "--sigma", "1.1", "--steps", "1000", "--delta", "1e-5")
	b := libEpsilon(t, accounting.NewRDPAccountant(accounting.AddRemove, accounting.ShuffleRigorous, nil), poissonSteps(0.01, 1.1, 1000), 1e-5)
	eps, order := b.Epsilon, b.Order
	if acctNum(t, m, "epsilon") != eps || acctNum(t, m, "order") != order {
		t.Errorf("epsilon %v order %v, library %v %v", m["epsilon"], m["order"], eps, order)
	}
	r2, _ := accounting.SampledGaussianRDP(0.01, 1.1, 2)
	if math.Abs(acctNum(t, m, "rdp_order2")-1000*r2) > 1e-12 {
		t.Errorf("rdp_order2 %v, want %v", m["rdp_order2"], 1000*r2)
	}
	// Theorem 1 takes the replace-one ε₂; the paper's add-remove value is labelled beside it.
	rr, _ := accounting.Order2StepRDP(accounting.ReplaceOne, accounting.SamplingPoisson, 0.01, 1.1)
	t1 := m["theorem1"].(map[string]any)
	if want := 1 / (4 * (math.Exp(1000*rr) - 1)); math.Abs(acctNum(t, t1, "mse_bound_rdp")-want) > 1e-9*want {
		t.Errorf("theorem1.mse_bound_rdp %v, want %v", t1["mse_bound_rdp"], want)
	}
	if want := 1 / (4 * (math.Exp(1000*r2) - 1)); t1["adjacency"] != "replace-one" || math.Abs(acctNum(t, t1, "paper_mse_bound_rdp_add_remove")-want) > 1e-9*want {
		t.Errorf("theorem1 %v, paper bound want %v", t1, want)
	}
	if m["adjacency"] != "add-remove" || m["sampling"] != "poisson" || m["accountant"] != "rdp" {
		t.Errorf("labels: %v %v %v", m["adjacency"], m["sampling"], m["accountant"])
	}
	// Classic conversion and explicit orders.
	c := accountJSON(t, "rdp", "--q", "0.01", "--sigma", "1.1", "--steps", "1000", "--delta", "1e-5",
		"--conversion", "classic", "--orders", "2,4,8,16,32")
	if c["conversion"] != "classic" || acctNum(t, c, "epsilon") <= eps {
		t.Errorf("classic on a coarse grid should be looser: %v vs %v", c["epsilon"], eps)
	}
	if o := acctNum(t, c, "order"); o != 2 && o != 4 && o != 8 && o != 16 && o != 32 {
		t.Errorf("order %v not from --orders", o)
	}
	// q = 1: order-2 RDP is T·2/(2σ²) = T/σ².
	f := accountJSON(t, "rdp", "--q", "1", "--sigma", "2", "--steps", "8", "--delta", "1e-5")
	if acctNum(t, f, "rdp_order2") != 2 {
		t.Errorf("q=1 rdp_order2 = %v, want 2", f["rdp_order2"])
	}
	// No leakage: the bound is +∞, encoded as null.
	z := accountJSON(t, "rdp", "--q", "0", "--sigma", "1", "--steps", "10", "--delta", "1e-5")
	if z["mse_bound_rdp"] != nil || acctNum(t, z, "epsilon") != 0 {
		t.Errorf("q=0: %v", z)
	}
	// Human output.
	out, _, err := runAccount(t, "rdp", "--q", "0.01", "--sigma", "1.1", "--steps", "1000", "--delta", "1e-5")
	if err != nil || !strings.Contains(out, "-DP") || !strings.Contains(out, "Theorem 1") {
		t.Errorf("human output %q, %v", out, err)
	}
}

func TestAccountRDPSchedule(t *testing.T) {
	m := accountJSON(t, "rdp", "--schedule", "0.01:2:500, 0.01:1.5:500,0.02:1:1000", "--delta", "1e-5")
	r := accounting.NewRDP(nil)
	for _, s := range []accounting.Step{{Q: 0.01, Sigma: 2, Steps: 500}, {Q: 0.01, Sigma: 1.5, Steps: 500}, {Q: 0.02, Sigma: 1, Steps: 1000}} {
		if err := r.Compose(s.Q, s.Sigma, s.Steps); err != nil {
			t.Fatal(err)
		}
	}
	eps, _, _ := r.Epsilon(1e-5, accounting.ConversionImproved)
	r2, _ := r.At(2)
	if math.Abs(acctNum(t, m, "epsilon")-eps) > 1e-12 || math.Abs(acctNum(t, m, "rdp_order2")-r2) > 1e-9*r2 || acctNum(t, m, "steps") != 2000 {
		t.Errorf("schedule result %v, want ε %v, ε₂ %v", m, eps, r2)
	}
	if _, ok := m["q"]; ok {
		t.Error("q must be absent with --schedule")
	}
	if len(m["schedule"].([]any)) != 3 {
		t.Errorf("schedule %v", m["schedule"])
	}
	// A one-segment schedule equals the plain command.
	one := accountJSON(t, "rdp", "--schedule", "0.01:1.1:1000", "--delta", "1e-5")
	plain := accountJSON(t, "rdp", "--q", "0.01", "--sigma", "1.1", "--steps", "1000", "--delta", "1e-5")
	if one["epsilon"] != plain["epsilon"] || one["rdp_order2"] != plain["rdp_order2"] {
		t.Errorf("one segment %v vs plain %v", one, plain)
	}
	out, _, err := runAccount(t, "rdp", "--schedule", "0.01:2:500,0.02:1:1000", "--delta", "1e-5")
	if err != nil || !strings.Contains(out, "schedule of 2 segments") {
		t.Errorf("human output %q, %v", out, err)
	}
}

func TestAccountRDPTargetEpsilon(t *testing.T) {
	m := accountJSON(t, "rdp", "--q", "0.01", "--steps", "1000", "--delta", "1e-5", "--target-epsilon", "2")
	s := acctNum(t, m, "sigma")
	if acctNum(t, m, "epsilon") > 2 || acctNum(t, m, "target_epsilon") != 2 {
		t.Errorf("sigma %v gives epsilon %v > 2", s, m["epsilon"])
	}
	e := libEpsilon(t, accounting.NewRDPAccountant(accounting.AddRemove, accounting.ShuffleRigorous, nil), poissonSteps(0.01, s*(1-2e-6), 1000), 1e-5).Epsilon
	if e <= 2 {
		t.Errorf("sigma %v not minimal: ε(0.999998σ) = %v", s, e)
	}
	out, _, err := runAccount(t, "rdp", "--q", "0.01", "--steps", "1000", "--delta", "1e-5", "--target-epsilon", "2")
	if err != nil || !strings.Contains(out, "noise multiplier sigma") {
		t.Errorf("human output %q, %v", out, err)
	}
}

func TestAccountReRo(t *testing.T) {
	m := accountJSON(t, "rero", "--q", "1", "--sigma", "2", "--steps", "10", "--kappa", "0.01", "--samples", "200000", "--seed", "3")
	mc := m["monte_carlo"].(map[string]any)
	exact, _ := accounting.ReRoClosedForm(2, 10, 0.01)
	lo, hi, g := acctNum(t, mc, "gamma_low"), acctNum(t, mc, "gamma_high"), acctNum(t, m, "gamma")
	if exact < lo || exact > hi || g != exact {
		t.Errorf("gamma %v, Monte Carlo CI [%v, %v], exact %v", g, lo, hi, exact)
	}
	if acctNum(t, m, "gamma_exact") != exact {
		t.Errorf("gamma_exact %v", m["gamma_exact"])
	}
	if adv := acctNum(t, m, "advantage"); math.Abs(adv-(g-0.01)/0.99) > 1e-12 {
		t.Errorf("advantage %v", adv)
	}
	if acctNum(t, m, "gamma_rdp") < exact {
		t.Errorf("gamma_rdp %v below exact %v", m["gamma_rdp"], exact)
	}
	if gt, gl := acctNum(t, m, "gamma_tradeoff"), acctNum(t, m, "gamma_tradeoff_lower"); math.Abs(gt-exact) > 1e-3 || gl > gt {
		t.Errorf("gamma_tradeoff [%v, %v], exact %v", gl, gt, exact)
	}
	// q < 1: gamma is the trade-off bound, inside the Monte Carlo interval.
	p := accountJSON(t, "rero", "--q", "0.1", "--sigma", "1", "--steps", "30", "--kappa", "0.05", "--samples", "100000", "--seed", "4")
	pmc := p["monte_carlo"].(map[string]any)
	if gt := acctNum(t, p, "gamma_tradeoff"); gt != acctNum(t, p, "gamma") || gt < acctNum(t, pmc, "gamma_low") || gt > acctNum(t, pmc, "gamma_high") {
		t.Errorf("gamma %v, gamma_tradeoff %v, Monte Carlo interval [%v, %v]", p["gamma"], gt, pmc["gamma_low"], pmc["gamma_high"])
	}
	// Prior size K ⇔ κ = 1/K; same seed, same result; workers do not matter.
	a := accountJSON(t, "rero", "--q", "0.05", "--sigma", "1", "--steps", "50", "--prior-size", "100", "--samples", "20000", "--workers", "1")
	b := accountJSON(t, "rero", "--q", "0.05", "--sigma", "1", "--steps", "50", "--kappa", "0.01", "--samples", "20000", "--workers", "3")
	amc, bmc := a["monte_carlo"].(map[string]any), b["monte_carlo"].(map[string]any)
	if a["gamma"] != b["gamma"] || amc["gamma"] != bmc["gamma"] || amc["gamma_high"] != bmc["gamma_high"] || acctNum(t, a, "kappa") != 0.01 {
		t.Errorf("prior-size/workers changed the result: %v vs %v", a, b)
	}
	if _, ok := a["gamma_exact"]; ok {
		t.Error("gamma_exact must be absent for q < 1")
	}
	out, _, err := runAccount(t, "rero", "--q", "1", "--sigma", "2", "--steps", "10", "--kappa", "0.01", "--samples", "10000")
	if err != nil || !strings.Contains(out, "ReRo gamma = ") || !strings.Contains(out, "closed form") || !strings.Contains(out, "Monte Carlo check (") {
		t.Errorf("human output %q, %v", out, err)
	}
}

// Issue 27: the rigorous bound comes first (on stderr, before the Monte Carlo's
// progress), the Monte Carlo is optional and capped, and the headline gamma is the
// rigorous bound with the Monte Carlo beside it.
func TestAccountReRoBoundFirst(t *testing.T) {
	out, errOut, err := runAccount(t, "rero", "--q", "0.01", "--sigma", "1", "--steps", "1000", "--kappa", "0.01", "--samples", "20000")
	if err != nil {
		t.Fatal(err)
	}
	b, p := strings.Index(errOut, "ReRo gamma ≤"), strings.Index(errOut, "rero Monte Carlo")
	if b < 0 || p < 0 || b > p {
		t.Errorf("stderr %q: want the bound before the Monte Carlo progress", errOut)
	}
	if !strings.Contains(out, "ReRo gamma ≤") || !strings.Contains(out, "PLD trade-off curve") || !strings.Contains(out, "Monte Carlo check (") {
		t.Errorf("stdout %q", out)
	}
	// T = 10⁵ with the default 10⁶ + 10⁶ draws is over the default cap: skipped at once.
	m := accountJSON(t, "rero", "--q", "0.01", "--sigma", "1", "--steps", "100000", "--kappa", "0.01", "--quiet")
	if m["monte_carlo"] != nil || !strings.Contains(fmt.Sprint(m["monte_carlo_skipped"]), "cap") || acctNum(t, m, "gamma") <= 0 {
		t.Errorf("T = 1e5: %v", m)
	}
	m = accountJSON(t, "rero", "--q", "0.01", "--sigma", "1", "--steps", "100", "--kappa", "0.01", "--monte-carlo=false")
	if m["monte_carlo"] != nil || m["monte_carlo_skipped"] != "not requested" {
		t.Errorf("--monte-carlo=false: %v", m)
	}
	// Without a Monte Carlo the report follows at once: the bound is not printed
	// early as well (it would appear twice on a terminal).
	if _, errOut, err := runAccount(t, "rero", "--q", "0.01", "--sigma", "1", "--steps", "100", "--kappa", "0.01", "--monte-carlo=false"); err != nil || strings.Contains(errOut, "ReRo gamma") {
		t.Errorf("--monte-carlo=false: stderr %q (err %v): want no early bound", errOut, err)
	}
	m = accountJSON(t, "rero", "--q", "0.01", "--sigma", "1", "--steps", "100", "--kappa", "0.01", "--samples", "1000", "--max-draws", "1000")
	if m["monte_carlo"] != nil {
		t.Errorf("--max-draws 1000: %v", m)
	}
	if _, _, err := runAccount(t, "rero", "--q", "0.01", "--sigma", "1", "--steps", "100", "--kappa", "0.01", "--max-draws", "-1"); err == nil {
		t.Error("--max-draws -1 accepted")
	}
}

func TestAccountFIL(t *testing.T) {
	dir := t.TempDir()
	p1, p2 := filepath.Join(dir, "a.npy"), filepath.Join(dir, "b.npy")
	if err := fil.Save(p1, []float64{1, 2, 3, 4}); err != nil {
		t.Fatal(err)
	}
	if err := fil.Save(p2, []float64{3, 2, 1, 0}); err != nil {
		t.Fatal(err)
	}
	m := accountJSON(t, "fil", "--dfil", p1)
	s := m["summary"].(map[string]any)
	if acctNum(t, s, "max") != 4 || acctNum(t, s, "median") != 2.5 || acctNum(t, s, "mse_bound_max") != 0.25 || acctNum(t, s, "count") != 4 {
		t.Errorf("summary %v", s)
	}
	merged := filepath.Join(dir, "m.npy")
	m2 := accountJSON(t, "fil", "--dfil", p1, "--dfil", p2, "--out", merged)
	s2 := m2["summary"].(map[string]any)
	if acctNum(t, m2, "runs") != 2 || acctNum(t, s2, "max") != 2 || acctNum(t, s2, "min") != 2 {
		t.Errorf("merged summary %v", m2)
	}
	if x, err := fil.Load(merged); err != nil || len(x) != 4 || x[3] != 2 {
		t.Errorf("merged file %v %v", x, err)
	}
	out, _, err := runAccount(t, "fil", "--dfil", p1)
	if err != nil || !strings.Contains(out, "Theorem 2") || !strings.Contains(out, "p50") {
		t.Errorf("human output %q, %v", out, err)
	}
}

func TestAccountKappa(t *testing.T) {
	m := accountJSON(t, "kappa", "--q", "0.01", "--sigma", "1.1", "--steps", "1000", "--n", "100")
	want, _ := accounting.Kappa(accounting.KappaParams{Q: 0.01, Sigma: 1.1, ClipConstant: 1, DeltaF: 1e-5})
	if acctNum(t, m, "kappa") != want || acctNum(t, m, "delta_f") != 1e-5 {
		t.Errorf("kappa %v", m)
	}
	m2 := accountJSON(t, "kappa", "--q", "0.01", "--sigma", "1.1", "--delta-f", "1e-6", "--clip-constant", "1.115")
	want2, _ := accounting.Kappa(accounting.KappaParams{Q: 0.01, Sigma: 1.1, ClipConstant: 1.115, DeltaF: 1e-6})
	if acctNum(t, m2, "kappa") != want2 {
		t.Errorf("kappa %v", m2)
	}
}

func TestAccountMSE(t *testing.T) {
	m := accountJSON(t, "mse", "--eps2", fmt.Sprint(math.Log(2)), "--dfil", "4")
	if math.Abs(acctNum(t, m, "mse_bound_rdp")-0.25) > 1e-12 || acctNum(t, m, "mse_bound_fil") != 0.25 {
		t.Errorf("mse %v", m)
	}
	if _, ok := m["mse_bound_van_trees"]; ok {
		t.Error("van Trees not requested")
	}
	// Paper observation 3: diameter 100, ε = 2 → ≈ 391.
	g := accountJSON(t, "mse", "--eps2", "2", "--diameter", "100")
	if math.Round(acctNum(t, g, "mse_bound_rdp")) != 391 {
		t.Errorf("diameter 100: %v", g)
	}
	v := accountJSON(t, "mse", "--dfil", "2", "--prior-fisher-trace", "3136", "--d", "784")
	if math.Abs(acctNum(t, v, "mse_bound_van_trees")-1.0/6) > 1e-15 {
		t.Errorf("van Trees %v", v)
	}
	z := accountJSON(t, "mse", "--dfil", "0")
	if _, ok := z["mse_bound_fil"]; ok || acctNum(t, z, "dfil") != 0 {
		t.Errorf("dFIL 0 must give an absent (infinite) bound: %v", z)
	}
	out, _, err := runAccount(t, "mse", "--eps2", "1", "--dfil", "0", "--prior-fisher-trace", "10", "--d", "10")
	if err != nil || !strings.Contains(out, "Theorem 1") || !strings.Contains(out, "+Inf") || !strings.Contains(out, "van Trees") {
		t.Errorf("human output %q, %v", out, err)
	}
}

func TestAccountHelp(t *testing.T) {
	out, _, err := runAccount(t)
	if err != nil || !strings.Contains(out, "rero") {
		t.Errorf("help %q %v", out, err)
	}
}

func TestAccountErrors(t *testing.T) {
	dir := t.TempDir()
	corrupt := filepath.Join(dir, "corrupt.npy")
	if err := os.WriteFile(corrupt, []byte("\x93NUMPY\x01\x00garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	short := filepath.Join(dir, "short.npy")
	if err := fil.Save(short, []float64{1, 2}); err != nil {
		t.Fatal(err)
	}
	rdp := []string{"rdp", "--steps", "100", "--delta", "1e-5"}
	rero := []string{"rero", "--steps", "10", "--samples", "1000", "--quiet"}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"rdp q>1", append(rdp, "--q", "1.5", "--sigma", "1"), "q"},
		{"rdp q<0", append(rdp, "--q", "-0.1", "--sigma", "1"), "q"},
		{"rdp q NaN", append(rdp, "--q", "NaN", "--sigma", "1"), "finite"},
		{"rdp sigma 0", append(rdp, "--q", "0.1", "--sigma", "0"), "sigma"},
		{"rdp sigma<0", append(rdp, "--q", "0.1", "--sigma", "-1"), "sigma"},
		{"rdp sigma Inf", append(rdp, "--q", "0.1", "--sigma", "Inf"), "finite"},
		{"rdp delta 0", []string{"rdp", "--steps", "100", "--delta", "0", "--q", "0.1", "--sigma", "1"}, "delta"},
		{"rdp delta 1", []string{"rdp", "--steps", "100", "--delta", "1", "--q", "0.1", "--sigma", "1"}, "delta"},
		{"rdp delta NaN", []string{"rdp", "--steps", "100", "--delta", "NaN", "--q", "0.1", "--sigma", "1"}, "finite"},
		{"rdp missing q", append(rdp, "--sigma", "1"), "[q steps]"},
		{"rdp missing delta", []string{"rdp", "--q", "0.1", "--sigma", "1", "--steps", "10"}, `"delta" not set`},
		{"rdp sigma and target", append(rdp, "--q", "0.1", "--sigma", "1", "--target-epsilon", "1"), "none of the others"},
		{"rdp neither sigma nor target", append(rdp, "--q", "0.1"), "at least one of the flags in the group [sigma target-epsilon schedule]"},
		{"rdp bad target", append(rdp, "--q", "0.1", "--target-epsilon", "-1"), "epsilon"},
		{"rdp target q=0", append(rdp, "--q", "0", "--target-epsilon", "1"), "q"},
		{"rdp negative steps", []string{"rdp", "--q", "0.1", "--sigma", "1", "--steps", "-1", "--delta", "1e-5"}, "steps"},
		{"rdp bad orders", append(rdp, "--q", "0.1", "--sigma", "1", "--orders", "2,x"), "orders"},
		{"rdp order ≤ 1", append(rdp, "--q", "0.1", "--sigma", "1", "--orders", "0.5,2"), "orders"},
		{"rdp bad conversion", append(rdp, "--q", "0.1", "--sigma", "1", "--conversion", "fancy"), "conversion"},
		{"schedule with q", []string{"rdp", "--schedule", "0.1:1:10", "--q", "0.1", "--steps", "10", "--delta", "1e-5"}, "[schedule q]"},
		{"schedule bad segment", []string{"rdp", "--schedule", "0.1:1", "--delta", "1e-5"}, "q:sigma:steps"},
		{"schedule not numbers", []string{"rdp", "--schedule", "0.1:x:10", "--delta", "1e-5"}, "q:sigma:steps"},
		{"schedule NaN", []string{"rdp", "--schedule", "NaN:1:10", "--delta", "1e-5"}, "non-finite"},
		{"schedule q>1", []string{"rdp", "--schedule", "0.1:1:10,1.5:1:10", "--delta", "1e-5"}, "segment 1"},
		{"schedule sigma 0", []string{"rdp", "--schedule", "0.1:0:10", "--delta", "1e-5"}, "sigma"},
		{"schedule negative steps", []string{"rdp", "--schedule", "0.1:1:-10", "--delta", "1e-5"}, "steps"},
		{"schedule no delta", []string{"rdp", "--schedule", "0.1:1:10"}, `"delta" not set`},
		{"schedule bad delta", []string{"rdp", "--schedule", "0.1:1:10", "--delta", "2"}, "delta"},
		{"rero q>1", append(rero, "--q", "2", "--sigma", "1", "--kappa", "0.1"), "q"},
		{"rero sigma 0", append(rero, "--q", "0.1", "--sigma", "0", "--kappa", "0.1"), "sigma"},
		{"rero kappa 0", append(rero, "--q", "0.1", "--sigma", "1", "--kappa", "0"), "kappa"},
		{"rero kappa>1", append(rero, "--q", "0.1", "--sigma", "1", "--kappa", "1.01"), "kappa"},
		{"rero kappa NaN", append(rero, "--q", "0.1", "--sigma", "1", "--kappa", "NaN"), "finite"},
		{"rero kappa and prior", append(rero, "--q", "0.1", "--sigma", "1", "--kappa", "0.1", "--prior-size", "10"), "[kappa prior-size] were all set"},
		{"rero neither kappa nor prior", append(rero, "--q", "0.1", "--sigma", "1"), "at least one of the flags in the group [kappa prior-size]"},
		{"rero prior 0", append(rero, "--q", "0.1", "--sigma", "1", "--prior-size", "0"), "prior"},
		{"rero samples 0", []string{"rero", "--steps", "10", "--q", "0.1", "--sigma", "1", "--kappa", "0.1", "--samples", "0"}, "samples"},
		{"rero mu-samples 0", append(rero, "--q", "0.1", "--sigma", "1", "--kappa", "0.1", "--mu-samples", "0"), "mu-samples"},
		{"rero steps 0", []string{"rero", "--steps", "0", "--q", "0.1", "--sigma", "1", "--kappa", "0.1"}, "steps"},
		{"rero confidence 1", append(rero, "--q", "0.1", "--sigma", "1", "--kappa", "0.1", "--confidence", "1"), "confidence"},
		{"rero missing sigma", append(rero, "--q", "0.1", "--kappa", "0.1"), `"sigma" not set`},
		{"fil no file", []string{"fil"}, "no input: give a run's dfil.npy or its run directory"},
		{"fil missing file", []string{"fil", "--dfil", filepath.Join(dir, "nope.npy")}, "nope.npy"},
		{"fil corrupt file", []string{"fil", "--dfil", corrupt}, "corrupt.npy"},
		{"fil length mismatch", []string{"fil", "--dfil", short, "--dfil", corrupt}, "npy"},
		{"kappa no delta", []string{"kappa", "--q", "0.1", "--sigma", "1"}, "delta-f"},
		{"kappa bad delta", []string{"kappa", "--q", "0.1", "--sigma", "1", "--delta-f", "2"}, "delta_f"},
		{"kappa bad clip", []string{"kappa", "--q", "0.1", "--sigma", "1", "--delta-f", "1e-5", "--clip-constant", "0"}, "clipping"},
		{"unknown flag", []string{"rdp", "--bogus"}, "unknown flag"},
		{"mse nothing", []string{"mse"}, "[eps2 dfil]"},
		{"mse eps2<0", []string{"mse", "--eps2", "-1"}, "RDP"},
		{"mse eps2 NaN", []string{"mse", "--eps2", "NaN"}, "RDP"},
		{"mse bad diameter", []string{"mse", "--eps2", "1", "--diameter", "-1"}, "diameter"},
		{"mse dfil<0", []string{"mse", "--dfil", "-1"}, "dfil"},
		{"mse dfil Inf", []string{"mse", "--dfil", "Inf"}, "finite"},
		{"mse prior without dfil", []string{"mse", "--eps2", "1", "--prior-fisher-trace", "1", "--d", "3"}, "needs dfil"},
		{"mse van Trees d=0", []string{"mse", "--dfil", "1", "--prior-fisher-trace", "1"}, "dimension"},
		{"mse van Trees J<0", []string{"mse", "--dfil", "1", "--prior-fisher-trace", "-1", "--d", "3"}, "prior"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, _, err := runAccount(t, append(tc.args, "--json")...)
			if err == nil {
				t.Fatalf("want an error, got output %q", out)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not mention %q", err, tc.want)
			}
			if out != "" {
				t.Errorf("stdout on error: %q", out)
			}
		})
	}
	// Merging runs of different lengths is an error too.
	other := filepath.Join(dir, "other.npy")
	if err := fil.Save(other, []float64{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runAccount(t, "fil", "--dfil", short, "--dfil", other); err == nil || !strings.Contains(err.Error(), "merge") {
		t.Errorf("length mismatch: %v", err)
	}
}

// The same bad input gives the same error message every time (validation runs in a
// fixed order, not over a Go map).
func TestAccountErrorsDeterministic(t *testing.T) {
	for _, args := range [][]string{
		{"rdp", "--q", "NaN", "--delta", "NaN", "--sigma", "Inf", "--steps", "10"},
		{"rero", "--q", "NaN", "--sigma", "Inf", "--steps", "10", "--kappa", "NaN", "--confidence", "NaN"},
		{"pld", "--q", "NaN", "--sigma", "Inf", "--steps", "10", "--delta", "NaN", "--interval", "NaN"},
		{"dpsgd", "--n", "10", "--batch", "1", "--steps", "1", "--sigma", "Inf", "--delta", "NaN"},
		{"dpsgd", "--n", "10", "--batch", "1", "--steps", "1", "--target-epsilon", "NaN", "--delta", "NaN", "--fil-delta", "NaN"},
		{"kappa", "--q", "NaN", "--sigma", "NaN", "--delta-f", "NaN", "--clip-constant", "NaN"},
		{"mse", "--eps2", "NaN", "--dfil", "NaN", "--diameter", "NaN"},
		// several flag-group violations at once
		{"rdp", "--schedule", "x", "--q", "1", "--sigma", "1", "--target-epsilon", "1"},
		{"rero", "--kappa", "0.1", "--prior-size", "3"},
	} {
		first := ""
		for i := 0; i < 20; i++ {
			_, _, err := runAccount(t, args...)
			if err == nil {
				t.Fatalf("%v: want an error", args)
			}
			if i == 0 {
				first = err.Error()
			} else if err.Error() != first {
				t.Fatalf("%v: run %d says %q, run 0 said %q", args, i, err, first)
			}
		}
	}
}

// Issue 27: every top-level number of 'account rdp --json' holds for the report's
// adjacency (the replace-one Theorem 1 numbers live in theorem1 only); shuffled
// runs name their zero-out adjacency; Theorem 1's proven ε₂ has the antipodal
// pair's exact value beside it, labelled.
func TestAccountPrivacyLabels(t *testing.T) {
	m := accountJSON(t, "rdp", "--q", "0.01", "--sigma", "0.5", "--steps", "1000", "--delta", "1e-5")
	if _, ok := m["mse_bound_rdp"]; ok {
		t.Errorf("top-level mse_bound_rdp (a replace-one value) beside add-remove numbers: %v", m)
	}
	if m["rdp_order2_adjacency"] != m["adjacency"] || m["adjacency"] != "add-remove" {
		t.Errorf("rdp_order2_adjacency %v, adjacency %v", m["rdp_order2_adjacency"], m["adjacency"])
	}
	th := m["theorem1"].(map[string]any)
	if math.Round(acctNum(t, th, "rdp_order2")*100) != 1097 || math.Round(acctNum(t, th, "rdp_order2_antipodal_exact")*100) != 713 ||
		!strings.Contains(fmt.Sprint(th["antipodal_note"]), "not proven to be the worst case") {
		t.Errorf("theorem1 %v: want proven ε₂ 10.97, antipodal 7.13 (issue 27)", th)
	}
	out, _, err := runAccount(t, "rdp", "--q", "0.01", "--sigma", "0.5", "--steps", "1000", "--delta", "1e-5")
	if err != nil || !strings.Contains(out, "order-2 RDP of the run (add-remove)") || !strings.Contains(out, "antipodal pair, exact (not proven worst case): ε₂ = 7.125") {
		t.Errorf("rdp human output %q, %v", out, err)
	}
	d := accountJSON(t, "dpsgd", "--n", "10000", "--batch", "100", "--steps", "300", "--sigma", "1", "--sampling", "shuffle")
	p := d["privacy"].(map[string]any)
	if p["adjacency"] != "zero-out" || !strings.Contains(fmt.Sprint(p["adjacency_meaning"]), "batches stay fixed") {
		t.Errorf("shuffle privacy %v", p)
	}
	if _, ok := p["theorem1"].(map[string]any)["rdp_order2_antipodal_exact"].(float64); !ok {
		t.Errorf("dpsgd theorem1 %v", p["theorem1"])
	}
	out, _, err = runAccount(t, "dpsgd", "--n", "10000", "--batch", "100", "--steps", "300", "--sigma", "1", "--sampling", "shuffle")
	if err != nil || !strings.Contains(out, "zero-out adjacency") || !strings.Contains(out, "the record's gradient is replaced by zero") ||
		strings.Contains(out, "add-remove adjacency") || !strings.Contains(out, "antipodal pair, exact") {
		t.Errorf("dpsgd human output %q, %v", out, err)
	}
}
