package cli

import (
	"math"
	"strings"
	"testing"

	"github.com/dpfil/dpfil/accounting"
)

func TestAccountPLD(t *testing.T) {
	m := accountJSON(t, "pld", "--q", "0.01", "--sigma", "1", "--steps", "10000", "--delta", "1e-5")
	e := libEpsilon(t, accounting.NewPLDAccountant(accounting.AddRemove, accounting.ShuffleRigorous, nil), poissonSteps(0.01, 1, 10000), 1e-5)
	if acctNum(t, m, "epsilon") != e.Epsilon || acctNum(t, m, "epsilon_lower") != *e.Lower {
		t.Errorf("epsilon %v lower %v, library %+v", m["epsilon"], m["epsilon_lower"], e)
	}
	if math.Abs(acctNum(t, m, "epsilon")-6.19) > 0.005 {
		t.Errorf("reference ε %v, want 6.19", m["epsilon"])
	}
	if m["accountant"] != "pld" || m["adjacency"] != "add-remove" || m["sampling"] != "poisson" ||
		acctNum(t, m, "interval") != 1e-4 || acctNum(t, m, "delta") != 1e-5 {
		t.Errorf("labels %v", m)
	}
	if d := acctNum(t, m, "discretisation_error"); d != e.Epsilon-*e.Lower || d < 0 {
		t.Errorf("discretisation_error %v", d)
	}
	rb := libEpsilon(t, accounting.NewRDPAccountant(accounting.AddRemove, accounting.ShuffleRigorous, nil), poissonSteps(0.01, 1, 10000), 1e-5)
	rdp, order := rb.Epsilon, rb.Order
	if acctNum(t, m, "epsilon_rdp") != rdp || acctNum(t, m, "rdp_order") != order || !(e.Epsilon < rdp) {
		t.Errorf("epsilon_rdp %v order %v, want %v %v (above PLD)", m["epsilon_rdp"], m["rdp_order"], rdp, order)
	}

	// Replace-one, Poisson: RDP has no ε bound there, the note says so.
	r := accountJSON(t, "pld", "--q", "0.01", "--sigma", "1", "--steps", "100", "--delta", "1e-5", "--adjacency", "replace-one")
	er := libEpsilon(t, accounting.NewPLDAccountant(accounting.ReplaceOne, accounting.ShuffleRigorous, nil), poissonSteps(0.01, 1, 100), 1e-5)
	if acctNum(t, r, "epsilon") != er.Epsilon || r["adjacency"] != "replace-one" || r["epsilon_rdp"] != nil ||
		!strings.Contains(r["rdp_note"].(string), "replace-one") {
		t.Errorf("replace-one: %v, library %+v", r, er)
	}
	// Uniform, replace-one, coarser grid: RDP beside it and above.
	u := accountJSON(t, "pld", "--q", "0.01", "--sigma", "2", "--steps", "1000", "--delta", "1e-5",
		"--adjacency", "replace-one", "--sampling", "uniform", "--interval", "1e-3")
	uniform := accounting.SelfComposedEvent{Event: accounting.SampledWithoutReplacementEvent{Q: 0.01, Event: accounting.GaussianEvent{NoiseMultiplier: 2}}, Count: 1000}
	eu := libEpsilon(t, accounting.NewPLDAccountant(accounting.ReplaceOne, accounting.ShuffleRigorous, &accounting.PLDConfig{Interval: 1e-3}), uniform, 1e-5)
	if acctNum(t, u, "epsilon") != eu.Epsilon || u["sampling"] != "uniform" || acctNum(t, u, "interval") != 1e-3 || eu.Interval != 1e-3 ||
		!(acctNum(t, u, "epsilon_rdp") > eu.Epsilon) {
		t.Errorf("uniform: %v, library %+v", u, eu)
	}
	// Human output.
	out, _, err := runAccount(t, "pld", "--q", "0.01", "--sigma", "1", "--steps", "1000", "--delta", "1e-5")
	if err != nil || !strings.Contains(out, "PLD: (") || !strings.Contains(out, "RDP accountant, for comparison") {
		t.Errorf("human output %q, %v", out, err)
	}
	out, _, err = runAccount(t, "pld", "--q", "0.01", "--sigma", "1", "--steps", "10", "--delta", "1e-5", "--adjacency", "replace-one")
	if err != nil || !strings.Contains(out, "RDP accountant, for comparison: none") {
		t.Errorf("human output %q, %v", out, err)
	}
}

func TestAccountPLDErrors(t *testing.T) {
	pld := []string{"pld", "--steps", "100", "--delta", "1e-5"}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"q>1", append(pld, "--q", "1.5", "--sigma", "1"), "q"},
		{"q NaN", append(pld, "--q", "NaN", "--sigma", "1"), "finite"},
		{"sigma 0", append(pld, "--q", "0.1", "--sigma", "0"), "sigma"},
		{"sigma Inf", append(pld, "--q", "0.1", "--sigma", "Inf"), "finite"},
		{"delta 0", []string{"pld", "--steps", "10", "--delta", "0", "--q", "0.1", "--sigma", "1"}, "delta"},
		{"delta 1", []string{"pld", "--steps", "10", "--delta", "1", "--q", "0.1", "--sigma", "1"}, "delta"},
		{"negative steps", []string{"pld", "--steps", "-1", "--delta", "1e-5", "--q", "0.1", "--sigma", "1"}, "steps"},
		{"missing q", append(pld, "--sigma", "1"), `"q" not set`},
		{"missing sigma", append(pld, "--q", "0.1"), `"sigma" not set`},
		{"missing delta", []string{"pld", "--steps", "10", "--q", "0.1", "--sigma", "1"}, `"delta" not set`},
		{"bad adjacency", append(pld, "--q", "0.1", "--sigma", "1", "--adjacency", "swap"), "adjacency"},
		{"bad sampling", append(pld, "--q", "0.1", "--sigma", "1", "--sampling", "stratified"), "sampling"},
		{"shuffle", append(pld, "--q", "0.1", "--sigma", "1", "--sampling", "shuffle"), "shuffle"},
		{"uniform add-remove", append(pld, "--q", "0.1", "--sigma", "1", "--sampling", "uniform"), "replace-one"},
		{"interval 0", append(pld, "--q", "0.1", "--sigma", "1", "--interval", "0"), "interval"},
		{"interval NaN", append(pld, "--q", "0.1", "--sigma", "1", "--interval", "NaN"), "finite"},
		{"interval too large", append(pld, "--q", "0.1", "--sigma", "1", "--interval", "2"), "interval"},
		{"noise too small", append(pld, "--q", "0.5", "--sigma", "0.01"), "noise"},
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
}

// poissonSteps is steps Poisson-sampled Gaussian steps at rate q, noise multiplier nm.
func poissonSteps(q, nm float64, steps int) accounting.Event {
	return accounting.SelfComposedEvent{Event: accounting.PoissonSampledEvent{Q: q, Event: accounting.GaussianEvent{NoiseMultiplier: nm}}, Count: steps}
}

// libEpsilon composes e into the library accountant a and returns its ε at delta.
func libEpsilon(t *testing.T, a accounting.Accountant, e accounting.Event, delta float64) accounting.EpsilonBound {
	t.Helper()
	if err := a.Compose(e); err != nil {
		t.Fatal(err)
	}
	b, err := a.Epsilon(delta)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
