package cli

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// runGLM executes 'dpfil glm …' and decodes its JSON output.
func runGLM(t *testing.T, args ...string) map[string]any {
	t.Helper()
	out, errs, err := execCLI(t, append(args, "--json", "--quiet")...)
	if err != nil {
		t.Fatalf("dpfil %v: %v (stderr: %s)", args, err, errs)
	}
	var res map[string]any
	dec := json.NewDecoder(strings.NewReader(out))
	if err := dec.Decode(&res); err != nil {
		t.Fatalf("decode JSON: %v; output %q", err, out)
	}
	if dec.More() {
		t.Fatal("more than one JSON value on stdout")
	}
	return res
}

func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func TestGLMFilCommand(t *testing.T) {
	dir := t.TempDir()
	res := runGLM(t, "glm", "fil", "--train-subset", "250", "--lambda", "1e-2", "--sigma", "1e-2", "--out", dir)
	for _, k := range []string{"n", "d", "accuracy", "eps2", "mse_bound_rdp", "eps2_paper", "dfil_max", "dfil_median", "dfil_mean", "grad_norm"} {
		if _, ok := res[k]; !ok {
			t.Fatalf("JSON lacks %q: %v", k, res)
		}
	}
	if res["n"].(float64) != 250 || res["d"].(float64) != 784 || res["bias"].(bool) {
		t.Fatalf("n/d/bias = %v/%v/%v", res["n"], res["d"], res["bias"])
	}
	if gn := res["grad_norm"].(float64); gn > 1e-10 {
		t.Fatalf("grad_norm %v", gn)
	}
	// Hand check of the accounting against the reported R: ε₂ = (2R/(nλ))²/σ².
	r := res["r"].(float64)
	want := math.Pow(2*r/(250*1e-2), 2) / 1e-4
	if e := res["eps2"].(float64); math.Abs(e-want) > 1e-9*want {
		t.Fatalf("eps2 %v, want %v", e, want)
	}
	if p := res["eps2_paper"].(float64); math.Abs(p-2/(250*1e-2*1e-2)) > 1e-9 {
		t.Fatalf("eps2_paper %v", p)
	}
	// The whole-domain bound R = 30 (≥ √785) instead of the data maximum, and
	// attribute FIL of all 784 columns, which must equal the per-example dFIL.
	adir := t.TempDir()
	dom := runGLM(t, "glm", "fil", "--train-subset", "250", "--radius", "30", "--columns", "0-783", "--out", adir)
	if a, d := dom["attr_dfil_max"].(float64), dom["dfil_max"].(float64); math.Abs(a-d) > 1e-9*d || dom["attr_columns"].(float64) != 784 {
		t.Fatalf("attribute FIL over all columns: max %v vs dfil_max %v", a, d)
	}
	if rows := readCSV(t, filepath.Join(adir, "glm_fil_attr.csv")); len(rows) != 251 {
		t.Fatalf("attribute CSV has %d rows", len(rows))
	}
	if r, e := dom["r"].(float64), dom["eps2"].(float64); r != 30 || math.Abs(e-math.Pow(60/2.5, 2)/1e-4) > 1e-6 {
		t.Fatalf("--radius 30: r %v eps2 %v", r, e)
	}
	rows := readCSV(t, filepath.Join(dir, "glm_fil.csv"))
	if len(rows) != 251 || strings.Join(rows[0], ",") != "index,label,dfil,eta,mse_bound,loss,grad_norm" {
		t.Fatalf("CSV has %d rows, header %v", len(rows), rows[0])
	}
	maxD, sum := 0.0, 0.0
	for _, row := range rows[1:] {
		d, err := strconv.ParseFloat(row[2], 64)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := strconv.ParseFloat(row[4], 64)
		if math.Abs(b*d-1) > 1e-8 {
			t.Fatalf("mse_bound %v is not 1/dfil %v", b, d)
		}
		maxD = math.Max(maxD, d)
		sum += d
	}
	if math.Abs(maxD-res["dfil_max"].(float64)) > 1e-8*maxD || math.Abs(sum/250-res["dfil_mean"].(float64)) > 1e-8*maxD {
		t.Fatalf("CSV max/mean %v/%v vs JSON %v/%v", maxD, sum/250, res["dfil_max"], res["dfil_mean"])
	}
	for _, f := range []string{"glm_fil_top8.png", "glm_fil_bottom8.png"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Fatalf("%s: %v", f, err)
		}
	}
}

func TestGLMAttackCommand(t *testing.T) {
	dir := t.TempDir()
	res := runGLM(t, "glm", "attack", "--train-subset", "200", "--sigma", "1e-3", "--trials", "100", "--targets", "60", "--seed", "3", "--out", dir)
	if res["targets"].(float64) != 60 || res["trials"].(float64) != 100 || !res["bias"].(bool) {
		t.Fatalf("targets/trials/bias: %v %v %v", res["targets"], res["trials"], res["bias"])
	}
	if res["nonfinite_trials"].(float64) != 0 {
		t.Fatalf("non-finite trials: %v", res["nonfinite_trials"])
	}
	rows := readCSV(t, filepath.Join(dir, "glm_attack.csv"))
	if len(rows) != 61 {
		t.Fatalf("%d CSV rows", len(rows))
	}
	viol, violBelow := 0, 0
	for _, row := range rows[1:] {
		bound, _ := strconv.ParseFloat(row[3], 64)
		mse, _ := strconv.ParseFloat(row[4], 64)
		if mse < bound {
			viol++
			if bound < 1 {
				violBelow++
			}
		}
		if row[7] != strconv.FormatBool(mse < bound) {
			t.Fatalf("violation flag %s for mse %v bound %v", row[7], mse, bound)
		}
	}
	if float64(viol) != res["violations"].(float64) || float64(violBelow) != res["violations_bound_below_1"].(float64) {
		t.Fatalf("violations CSV %d/%d vs JSON %v/%v", viol, violBelow, res["violations"], res["violations_bound_below_1"])
	}
	// The grids carry a title, row labels and captions: larger than the bare 2×8 grid
	// of 28×28 digits at 3× with 1-pixel gaps (681×171 px).
	for _, f := range []string{"glm_attack_top8.png", "glm_attack_bottom8.png"} {
		fh, err := os.Open(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := png.DecodeConfig(fh)
		fh.Close()
		if err != nil || cfg.Width < 681+40 || cfg.Height < 171+30 {
			t.Errorf("%s: %dx%d px (%v): no room for its labels", f, cfg.Width, cfg.Height, err)
		}
	}
	// Same seed → same result.
	again := runGLM(t, "glm", "attack", "--train-subset", "200", "--sigma", "1e-3", "--trials", "100", "--targets", "60", "--seed", "3", "--out", t.TempDir())
	if again["mse_mean"] != res["mse_mean"] {
		t.Fatalf("not reproducible: %v vs %v", again["mse_mean"], res["mse_mean"])
	}
}

func TestGLMIRFILCommand(t *testing.T) {
	dir := t.TempDir()
	res := runGLM(t, "glm", "irfil", "--train-subset", "150", "--iters", "3", "--clamp", "0.05,20", "--out", dir)
	its := res["iterations"].([]any)
	if len(its) != 4 {
		t.Fatalf("%d iterations reported", len(its))
	}
	if !(res["spread_final"].(float64) < res["spread_initial"].(float64)) {
		t.Fatalf("spread did not fall: %v → %v", res["spread_initial"], res["spread_final"])
	}
	rows := readCSV(t, filepath.Join(dir, "glm_irfil_weights.csv"))
	for _, row := range rows[1:] {
		w, _ := strconv.ParseFloat(row[2], 64)
		if w < 0.05 || w > 20 {
			t.Fatalf("weight %v outside clamp", w)
		}
	}
}

func TestGLMCommandErrors(t *testing.T) {
	cases := [][]string{
		{"glm", "fil", "--lambda", "0"},
		{"glm", "fil", "--sigma", "-1"},
		{"glm", "fil", "--loss", "hinge"},
		{"glm", "fil", "--dataset", "mnist-embedded"},
		{"glm", "attack", "--bias=false"},
		{"glm", "attack", "--trials", "0"},
		{"glm", "irfil", "--clamp", "2,1"},
		{"glm", "irfil", "--clamp", "x"},
		{"glm", "fil", "--radius", "0.5"},
		{"glm", "fil", "--radius", "NaN"},
		{"glm", "fil", "--columns", "5-2"},
		{"glm", "fil", "--columns", "784"},
		{"glm", "fil", "--columns", "1,1"},
		{"glm", "fil", "--pca", "-1"},
		{"glm", "fil", "--pca", "785"},
		{"glm", "fil", "--pca", "50"}, // not below the 50 training examples
		{"glm", "fil", "--pca", "5", "--columns", "5"},
		{"glm", "irfil", "--pca", "-2"},
		{"glm", "attack", "--pca", "20"}, // the pixel-reconstruction attack takes no PCA
		{"glm", "fil", "--write-features", "/proc/no-such-dir/feat.csv"},
	}
	for _, args := range cases {
		root := newRootCmd()
		root.SetArgs(append(args, "--quiet", "--train-subset", "50", "--out", t.TempDir()))
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&out)
		if err := root.Execute(); err == nil {
			t.Fatalf("%v succeeded", args)
		}
	}
}

// TestGLMHannunPCACommands runs 'glm fil' and 'glm irfil' on Hannun et al.'s (2021)
// unit-ball + PCA features with η over (x, y), and checks the JSON against the CSV.
func TestGLMHannunPCACommands(t *testing.T) {
	dir := t.TempDir()
	res := runGLM(t, "glm", "fil", "--train-subset", "300", "--pca", "6", "--with-label", "--loss", "lsq", "--lambda", "1e-6", "--sigma", "1", "--out", dir)
	if res["d"].(float64) != 6 || res["p"].(float64) != 6 || res["preprocess"] != "unit-ball+pca-6" || res["with_label"] != true {
		t.Fatalf("d/p/preprocess/with_label = %v/%v/%v/%v", res["d"], res["p"], res["preprocess"], res["with_label"])
	}
	if ex := res["pca_explained_variance"].(float64); !(ex > 0 && ex < 1) {
		t.Fatalf("explained variance %v", ex)
	}
	rows := readCSV(t, filepath.Join(dir, "glm_fil.csv"))
	if strings.Join(rows[0], ",") != "index,label,dfil,eta,mse_bound,loss,grad_norm" || len(rows) != 301 {
		t.Fatalf("glm_fil.csv header %v, %d rows", rows[0], len(rows))
	}
	var sum float64
	n := [2]int{}
	for _, row := range rows[1:] {
		eta, _ := strconv.ParseFloat(row[3], 64)
		sum += eta
		lab, _ := strconv.Atoi(row[1])
		n[lab]++
	}
	if mean := res["eta_mean"].(float64); math.Abs(mean-sum/300) > 1e-9*mean {
		t.Fatalf("eta_mean %v, CSV mean %v", mean, sum/300)
	}
	classes := res["eta_by_class"].([]any)
	for c, v := range classes {
		if got := int(v.(map[string]any)["n"].(float64)); got != n[c] {
			t.Fatalf("class %d: n %d, CSV %d", c, got, n[c])
		}
	}
	if _, ok := res["eta_heuristics"].(map[string]any)["spearman_eta_loss"]; !ok {
		t.Fatal("no eta_heuristics")
	}
	for _, f := range []string{"glm_eta_hist.png", "glm_eta_top8.png", "glm_eta_bottom8.png"} {
		fh, err := os.Open(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := png.Decode(fh); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		fh.Close()
	}
	// The features as a table for 'glm invert --csv', and the MNIST analogue of
	// Hannun et al.'s Fig. 7b: attack a PCA feature, deciles by the initial η.
	feat := filepath.Join(dir, "feat.csv")
	runGLM(t, "glm", "fil", "--train-subset", "300", "--pca", "6", "--with-label", "--loss", "lsq", "--lambda", "1e-6", "--sigma", "1", "--out", dir, "--write-features", feat)
	frows := readCSV(t, feat)
	if strings.Join(frows[0], ",") != "z1,z2,z3,z4,z5,z6,target" || len(frows) != 301 {
		t.Fatalf("features header %v, %d rows", frows[0], len(frows))
	}
	for k, row := range frows[1:] {
		if want := map[string]string{"0": "-1", "1": "1"}[rows[k+1][1]]; row[6] != want {
			t.Fatalf("row %d: target %s, label %s", k, row[6], rows[k+1][1])
		}
	}
	inv := runGLM(t, "glm", "invert", "--csv", feat, "--target", "target", "--columns", "z1", "--unit-ball=false", "--bias=false",
		"--loss", "lsq", "--lambda", "1e-6", "--sigma", "1e-3", "--targets", "20", "--trials", "2", "--irfil", "2")
	if inv["eta_deciles_by"] != "initial_eta_sq" || len(inv["eta_deciles"].([]any)) != 10 {
		t.Fatalf("glm invert deciles by %v: %v", inv["eta_deciles_by"], inv["eta_deciles"])
	}
	ir := runGLM(t, "glm", "irfil", "--train-subset", "300", "--pca", "6", "--with-label", "--loss", "lsq", "--lambda", "1e-6", "--iters", "4", "--out", t.TempDir())
	its := ir["iterations"].([]any)
	first := its[0].(map[string]any)
	if math.Abs(first["eta_mean"].(float64)-res["eta_mean"].(float64)) > 1e-9 {
		t.Fatalf("irfil iteration 0 η mean %v, glm fil %v", first["eta_mean"], res["eta_mean"])
	}
	if !(ir["spread_final"].(float64) < 0.2*ir["spread_initial"].(float64)) {
		t.Fatalf("IRFIL spread %v → %v", ir["spread_initial"], ir["spread_final"])
	}
}
