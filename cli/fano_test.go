package cli

import (
	"math"
	"strings"
	"testing"

	"github.com/dpfil/dpfil/accounting"
)

// TestAccountReRoFano: 'account rero' reports the Fano bound beside ReRo, in JSON and
// in the human output, equal to the library's FanoDPSGD; without a uniform prior it
// says why there is none.
func TestAccountReRoFano(t *testing.T) {
	m := accountJSON(t, "rero", "--q", "1", "--sigma", "1", "--steps", "1", "--prior-size", "10", "--monte-carlo=false")
	f, ok := m["fano"].(map[string]any)
	if !ok {
		t.Fatalf("no fano object in %v", m)
	}
	want, err := accounting.FanoDPSGD(1, 1, 1, 10)
	if err != nil {
		t.Fatal(err)
	}
	if s := acctNum(t, f, "success"); s != want.Success || acctNum(t, f, "mutual_info") != 0.5 || acctNum(t, f, "prior_size") != 10 {
		t.Errorf("fano %v, want success %v, I = 0.5, K = 10", f, want.Success)
	}
	if adv := acctNum(t, f, "advantage"); math.Abs(adv-(want.Success-0.1)/0.9) > 1e-12 || adv < acctNum(t, m, "advantage") {
		t.Errorf("fano advantage %v (ReRo's %v)", adv, m["advantage"])
	}
	out, _, err := runAccount(t, "rero", "--q", "0.01", "--sigma", "1", "--steps", "1000", "--prior-size", "100", "--monte-carlo=false")
	if err != nil || !strings.Contains(out, "Fano bound (Guo et al. 2022b, uniform prior K = 100): success ≤ ") {
		t.Errorf("human output %q, %v", out, err)
	}
	n := accountJSON(t, "rero", "--q", "0.01", "--sigma", "1", "--steps", "100", "--kappa", "0.3", "--monte-carlo=false")
	if n["fano"] != nil || !strings.Contains(n["fano_note"].(string), "uniform prior") {
		t.Errorf("κ = 0.3: fano %v, note %v", n["fano"], n["fano_note"])
	}
}
