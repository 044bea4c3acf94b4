package sweep

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/dpfil/dpfil/internal/dirlock"
	"github.com/dpfil/dpfil/internal/jsonfloat"
	"github.com/dpfil/dpfil/train"
)

// This file holds the typed requests and reports behind the 'dpfil sweep' commands:
// each command binds its flags to a request, calls one function and prints the
// report (its JSON, or its WriteText).

// Expanded is a grid file read and expanded into its jobs.
type Expanded struct {
	File string // the grid file
	Grid *Grid
	Jobs []Job
}

// Expand reads the grid file and expands it into jobs (Grid.Jobs).
func Expand(file string) (*Expanded, error) {
	return ExpandModels(file, nil)
}

// ExpandModels is Expand for a program with registered models: the grid's
// model: NAME may name one of reg (Grid.Models).
func ExpandModels(file string, reg train.Registry) (*Expanded, error) {
	g, err := LoadGrid(file)
	if err != nil {
		return nil, err
	}
	g.Models = reg
	jobs, err := g.Jobs()
	if err != nil {
		return nil, err
	}
	return &Expanded{File: file, Grid: g, Jobs: jobs}, nil
}

// RunPoint is the headline numbers of one finished run. In JSON a number that is not
// finite (an infinite ε without noise, an infinite FIL bound when FIL is off, a NaN
// accuracy the record lacks) is null, and null reads back as result.json's reader
// (train.Metrics) reads the same field: NaN for the accuracy, +Inf for ε and the
// bounds; a report written, read and written again is byte-identical.
type RunPoint struct {
	Index             int
	Hash              string
	TestAccuracy      float64
	Epsilon           float64
	MSEBoundRDP       float64
	MSEBoundFILMax    float64
	MSEBoundFILMedian float64
}

// runPointJSON is RunPoint's JSON form.
type runPointJSON struct {
	Index             int             `json:"index"`
	Hash              string          `json:"hash"`
	TestAccuracy      jsonfloat.Float `json:"test_accuracy"`
	Epsilon           jsonfloat.Inf   `json:"epsilon"`
	MSEBoundRDP       jsonfloat.Inf   `json:"mse_bound_rdp"`
	MSEBoundFILMax    jsonfloat.Inf   `json:"mse_bound_fil_max"`
	MSEBoundFILMedian jsonfloat.Inf   `json:"mse_bound_fil_median"`
}

// MarshalJSON writes the point with null for numbers that are not finite.
func (p RunPoint) MarshalJSON() ([]byte, error) {
	return json.Marshal(runPointJSON{p.Index, p.Hash, jsonfloat.Float(p.TestAccuracy), jsonfloat.Inf(p.Epsilon),
		jsonfloat.Inf(p.MSEBoundRDP), jsonfloat.Inf(p.MSEBoundFILMax), jsonfloat.Inf(p.MSEBoundFILMedian)})
}

// UnmarshalJSON reads a point written by MarshalJSON.
func (p *RunPoint) UnmarshalJSON(b []byte) error {
	var j runPointJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*p = RunPoint{j.Index, j.Hash, float64(j.TestAccuracy), float64(j.Epsilon), float64(j.MSEBoundRDP), float64(j.MSEBoundFILMax), float64(j.MSEBoundFILMedian)}
	return nil
}

// PointOf is the headline numbers of r; NaN accuracy and infinite bounds when its
// result does not decode.
func PointOf(r Record) RunPoint {
	m, err := r.Metrics()
	if err != nil {
		inf := math.Inf(1)
		m = Metrics{TestAccuracy: math.NaN(), Epsilon: inf, MSEBoundRDP: inf, MSEBoundFILMax: inf, MSEBoundFILMedian: inf}
	}
	return RunPoint{Index: r.Index, Hash: r.Hash, TestAccuracy: m.TestAccuracy, Epsilon: m.Epsilon,
		MSEBoundRDP: m.MSEBoundRDP, MSEBoundFILMax: m.MSEBoundFILMax, MSEBoundFILMedian: m.MSEBoundFILMedian}
}

// RunRequest is a sweep run: the shard of an expanded grid to run into Out.
type RunRequest struct {
	Out     string // sweep directory
	Shard   Shard  // the zero value means 0/1
	Workers int    // runs in parallel, at least 1
	Runner  Runner
	Logf    func(format string, args ...any) // optional
	// OnDone, if set, is called (serially) after each run is recorded.
	OnDone func(Record)
}

// RunReport is what Expanded.Run did: Run's summary and the headline numbers of the
// runs it finished, by grid index.
type RunReport struct {
	Summary
	Points []RunPoint `json:"points"`
	grid   string
	out    string
}

// Run runs the request's shard (Run) and reports the points it finished, also when
// runs failed or ctx was cancelled (the error says so). The report is nil when
// nothing ran: the request is invalid or another process holds the directory.
func (e *Expanded) Run(ctx context.Context, req RunRequest) (*RunReport, error) {
	if req.Out == "" {
		return nil, errors.New("sweep run: no output directory")
	}
	if req.Workers < 1 {
		return nil, fmt.Errorf("sweep run: workers = %d must be at least 1", req.Workers)
	}
	var mu sync.Mutex
	rep := &RunReport{Points: []RunPoint{}, grid: e.Grid.Name, out: req.Out}
	sum, err := Run(ctx, e.Jobs, Options{
		Out: req.Out, Shard: req.Shard, Workers: req.Workers, Grid: e.Grid.Name, Runner: req.Runner, Logf: req.Logf,
		OnDone: func(r Record) {
			if req.OnDone != nil {
				req.OnDone(r)
			}
			mu.Lock()
			rep.Points = append(rep.Points, PointOf(r))
			mu.Unlock()
		},
	})
	if errors.Is(err, dirlock.ErrLocked) {
		return nil, err // nothing ran: no summary that could read as "nothing pending"
	}
	sort.Slice(rep.Points, func(i, j int) bool { return rep.Points[i].Index < rep.Points[j].Index })
	rep.Summary = sum
	return rep, err
}

// WriteText writes the report for people: the counts, the points' table, failures,
// unusable lines and the results file.
func (r *RunReport) WriteText(w io.Writer) {
	s := r.Summary
	fmt.Fprintf(w, "sweep %s shard %s: %d runs, %d already done, %d ran, %d failed, %d pending (%.1f s)\n",
		r.grid, s.Shard, s.Jobs, s.AlreadyDone, s.Ran, len(s.Failed), s.Pending, s.Seconds)
	WritePoints(w, r.Points)
	for _, f := range s.Failed {
		fmt.Fprintf(w, "  failed: run %d (%s): %s\n", f.Index, f.Hash, f.Error)
	}
	writeBad(w, "  skipped unusable line ", s.BadLines)
	fmt.Fprintf(w, "results: %s\n", ResultsPath(r.out))
}

// WritePoints writes a table of points (nothing for none); ∞ marks a number that is
// not finite.
func WritePoints(w io.Writer, points []RunPoint) {
	if len(points) == 0 {
		return
	}
	f := func(x float64) string {
		if !jsonfloat.Finite(x) {
			return "∞"
		}
		return fmt.Sprintf("%.3g", x)
	}
	fmt.Fprintf(w, "  %5s  %-16s  %8s  %8s  %12s  %12s  %12s\n", "run", "hash", "test acc", "ε", "MSE≥ RDP", "MSE≥ FIL max", "MSE≥ FIL med")
	for _, p := range points {
		fmt.Fprintf(w, "  %5d  %-16s  %8s  %8s  %12s  %12s  %12s\n", p.Index, p.Hash, f(p.TestAccuracy), f(p.Epsilon), f(p.MSEBoundRDP), f(p.MSEBoundFILMax), f(p.MSEBoundFILMedian))
	}
	fmt.Fprintln(w, "  (MSE≥: lower bounds on a reconstruction attack's per-pixel MSE; ∞: no leakage measured, e.g. FIL off)")
}

func writeBad(w io.Writer, prefix string, bad []BadLine) {
	for _, b := range bad {
		fmt.Fprintf(w, "%s%s\n", prefix, b)
	}
}

// StatusReport is Status with the grid's name.
type StatusReport struct {
	Status
	grid string
}

// Status counts the finished and pending jobs of the shard in the sweep directory out.
func (e *Expanded) Status(out string, shard Shard) (*StatusReport, error) {
	if out == "" {
		return nil, errors.New("sweep status: no output directory")
	}
	st, err := StatusOf(e.Jobs, shard, out)
	if err != nil {
		return nil, err
	}
	return &StatusReport{Status: st, grid: e.Grid.Name}, nil
}

// WriteText writes the counts for people.
func (r *StatusReport) WriteText(w io.Writer) {
	st := r.Status
	fmt.Fprintf(w, "sweep %s shard %s: %d runs, %d done, %d pending (%d of them started)\n", r.grid, st.Shard, st.Jobs, st.Done, st.Pending, st.Started)
	if st.Foreign > 0 {
		fmt.Fprintf(w, "  %d recorded runs are not in this grid\n", st.Foreign)
	}
	writeBad(w, "  unusable line ", st.BadLines)
}

// Listing is the jobs of one shard of a grid.
type Listing struct {
	Grid  string   `json:"grid"`
	Shard string   `json:"shard"`
	Total int      `json:"total"` // jobs of the whole grid
	Keys  []string `json:"keys"`  // swept settings
	Jobs  []Job    `json:"jobs"`  // the shard's jobs
	g     *Grid
}

// List lists the jobs of the shard.
func (e *Expanded) List(shard Shard) (*Listing, error) {
	if shard.N == 0 {
		shard = Shard{I: 0, N: 1}
	}
	if err := shard.Validate(); err != nil {
		return nil, err
	}
	mine := shard.Select(e.Jobs)
	if mine == nil {
		mine = []Job{}
	}
	return &Listing{Grid: e.Grid.Name, Shard: shard.String(), Total: len(e.Jobs), Keys: e.Grid.Keys(), Jobs: mine, g: e.Grid}, nil
}

// WriteText writes one line per job: index, hash and swept settings (and the seed
// when the grid repeats each point).
func (l *Listing) WriteText(w io.Writer) {
	pts, reps := l.g.Points(), max(l.g.Repeats, 1)
	fmt.Fprintf(w, "grid %s: %d runs (%d grid points × %d repeats); shard %s has %d\n", l.Grid, l.Total, len(pts), l.g.Repeats, l.Shard, len(l.Jobs))
	for _, j := range l.Jobs {
		var parts []string
		for _, k := range l.Keys {
			parts = append(parts, fmt.Sprintf("%s=%v", k, pts[j.Index/reps][k]))
		}
		if l.g.Repeats > 1 {
			parts = append(parts, fmt.Sprintf("seed=%d", j.Config.Seed))
		}
		fmt.Fprintf(w, "%5d  %s  %s\n", j.Index, j.Hash, strings.Join(parts, " "))
	}
}

// PlanRequest is a cluster plan for an expanded grid: PlanOptions, whose Name, Out,
// Grid and GridYAML Plan fills in, and the scheduler.
type PlanRequest struct {
	PlanOptions
	Kubernetes bool // a Kubernetes Indexed Job; otherwise a Slurm job array
}

// ClusterPlan is a written plan.
type ClusterPlan struct {
	Text string      // the script or manifest
	Mode os.FileMode // file mode to write it with: executable for a Slurm script
	Runs int         // jobs of the grid
}

var nonName = regexp.MustCompile(`[^a-z0-9-]+`)

// Plan writes the Slurm script or Kubernetes manifest that runs the grid in
// req.Shards shards. The job name defaults to dpfil-<grid name> (made a valid name),
// the results root to sweep-<grid name> (Slurm) or /results (Kubernetes).
func (e *Expanded) Plan(req PlanRequest) (*ClusterPlan, error) {
	opt := req.PlanOptions
	if opt.Shards > len(e.Jobs) {
		return nil, fmt.Errorf("sweep plan: %d shards for %d runs would leave shards empty", opt.Shards, len(e.Jobs))
	}
	if opt.Name == "" {
		opt.Name = strings.Trim(nonName.ReplaceAllString(strings.ToLower("dpfil-"+e.Grid.Name), "-"), "-")
		if len(opt.Name) > 52 {
			opt.Name = strings.TrimRight(opt.Name[:52], "-")
		}
	}
	p := &ClusterPlan{Mode: 0o755, Runs: len(e.Jobs)}
	var err error
	if !req.Kubernetes {
		if opt.Out == "" {
			opt.Out = "sweep-" + e.Grid.Name
		}
		opt.Grid = e.File
		p.Text, err = SlurmScript(opt)
		return p, err
	}
	if f := e.Grid.archFiles(); len(f) > 0 {
		return nil, fmt.Errorf("sweep plan: the grid names architecture files (%s), which the Kubernetes ConfigMap does not carry (it holds the grid file only): use --slurm, or a container image that holds them at an absolute path named in the grid", strings.Join(f, ", "))
	}
	if opt.Out == "" {
		opt.Out = "/results"
	}
	if opt.GridYAML, err = os.ReadFile(e.File); err != nil {
		return nil, fmt.Errorf("sweep plan: %w", err)
	}
	p.Mode = 0o644
	p.Text, err = K8sManifest(opt)
	return p, err
}

// WriteFile writes the plan to file, creating its directory.
func (p *ClusterPlan) WriteFile(file string) error {
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return fmt.Errorf("sweep plan: %w", err)
	}
	if err := os.WriteFile(file, []byte(p.Text), p.Mode); err != nil {
		return fmt.Errorf("sweep plan: %w", err)
	}
	return nil
}

// ReadInputs reads and merges (Merge) any mix of sweep directories (their
// results.jsonl), results files, run directories (their result.json), a run's
// result.json and directories of run directories (each a record whose Index is -1;
// see ReadRun). Each input must exist and hold at least one record; an error says
// why one does not (empty, binary, every line unusable, an unfinished run).
// Unusable lines are reported in the MergeReport.
func ReadInputs(paths []string) ([]Record, MergeReport, error) {
	in := inputs{prefix: "results"}
	for _, p := range paths {
		if err := in.addAny(p); err != nil {
			return nil, MergeReport{}, err
		}
	}
	return in.merge()
}

// inputs gathers the sources of a merge, each file once.
type inputs struct {
	prefix string // of errors
	seen   map[string]bool
	srcs   []Source
	bad    []BadLine
}

// add reads the results file p or the results.jsonl of directory p. A missing file
// is an error when mustExist and adds nothing otherwise; a file without a record is
// an error (saying why) when mustHold.
func (in *inputs) add(p string, mustExist, mustHold bool) error {
	file := p
	if fi, err := os.Stat(p); err == nil && fi.IsDir() {
		file = ResultsPath(p)
	}
	if _, err := os.Stat(file); err != nil {
		if mustExist {
			return fmt.Errorf("%s: %w", in.prefix, err)
		}
		return nil
	}
	if !in.first(file) {
		return nil
	}
	recs, bad, err := ReadResults(file)
	if err != nil {
		return err
	}
	if len(recs) == 0 && mustHold {
		return explainNoRecords(file, bad)
	}
	in.bad = append(in.bad, bad...)
	in.srcs = append(in.srcs, Source{Name: file, Records: recs})
	return nil
}

func (in *inputs) merge() ([]Record, MergeReport, error) {
	recs, rep, err := Merge(in.srcs)
	rep.BadLines = append(rep.BadLines, in.bad...)
	return recs, rep, err
}

// MergeRequest merges the results of several sweep directories or results files
// into Out/results.jsonl.
type MergeRequest struct {
	Out       string   // directory to write results.jsonl into; its own results are merged in first
	Inputs    []string // sweep directories or results files
	KeepFirst bool     // on conflicts keep the first record and write anyway
}

// MergeResult is what MergeDirs did.
type MergeResult struct {
	MergeReport
	Out     string `json:"out"`     // the merged results file
	Written bool   `json:"written"` // false when conflicts stopped the merge
	files   int
}

// MergeDirs merges the inputs into req.Out/results.jsonl under the directory's lock
// (a sweep appending to it meanwhile would lose records). Records are deduplicated
// by config hash; two records of one hash with different metrics are a conflict:
// unless KeepFirst, nothing is written and the error names the first conflict (the
// result still describes the merge).
func MergeDirs(req MergeRequest) (*MergeResult, error) {
	if req.Out == "" {
		return nil, errors.New("sweep merge: no output directory")
	}
	unlock, err := LockDir(req.Out)
	if err != nil {
		return nil, fmt.Errorf("sweep merge: %w", err)
	}
	defer unlock()
	dst := ResultsPath(req.Out)
	in := inputs{prefix: "sweep merge"}
	if err := in.add(dst, false, false); err != nil {
		return nil, err
	}
	for _, p := range req.Inputs {
		if err := in.add(p, true, false); err != nil {
			return nil, err
		}
	}
	recs, rep, err := in.merge()
	if err != nil {
		return nil, err
	}
	res := &MergeResult{MergeReport: rep, Out: dst, files: len(in.srcs)}
	if c := rep.Conflicts; len(c) > 0 && !req.KeepFirst {
		return res, fmt.Errorf("sweep merge: %d configs have conflicting results (first: %s, %s vs %s, differing in %s); nothing written (--keep-first keeps the first)",
			len(c), c[0].Hash, c[0].Kept, c[0].Other, strings.Join(c[0].Fields, ", "))
	}
	if err := WriteResults(dst, recs); err != nil {
		return nil, err
	}
	res.Written = true
	return res, nil
}

// WriteText writes the merge's counts, conflicts and unusable lines for people.
func (r *MergeResult) WriteText(w io.Writer) {
	fmt.Fprintf(w, "merged %d files: %d records read, %d unique, %d duplicates, %d conflicts, %d unusable lines\n",
		r.files, r.Read, r.Unique, r.Duplicates, len(r.Conflicts), len(r.BadLines))
	for _, c := range r.Conflicts {
		fmt.Fprintf(w, "  conflict %s: %s vs %s differ in %s\n", c.Hash, c.Kept, c.Other, strings.Join(c.Fields, ", "))
	}
	writeBad(w, "  skipped unusable line ", r.BadLines)
	if r.Written {
		fmt.Fprintf(w, "wrote %s\n", r.Out)
	}
}

// explainNoRecords says why a results file gave no run: empty, not a results file
// (binary), or every line unusable (the first reason).
func explainNoRecords(file string, bad []BadLine) error {
	head := make([]byte, 512)
	f, err := os.Open(file)
	if err != nil {
		return fmt.Errorf("results: %w", err)
	}
	n, _ := f.Read(head)
	f.Close()
	head = head[:n]
	switch {
	case len(strings.TrimSpace(string(head))) == 0:
		return fmt.Errorf("%s is empty: no run recorded yet (has the sweep finished a run? see 'dpfil sweep status')", file)
	case bytes.IndexByte(head, 0) >= 0 || !utf8.Valid(head[:n-min(n, 3)]): // a rune may be cut at the end
		return fmt.Errorf("%s is not a results file: it holds binary data (want the results.jsonl a sweep writes, one JSON record per line)", file)
	case len(bad) > 0:
		return fmt.Errorf("%s has no usable record: %d unusable lines, the first %s", file, len(bad), bad[0])
	}
	return fmt.Errorf("%s has no record", file)
}
