package sweep

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/dpfil/dpfil/internal/atomicfile"
	"github.com/dpfil/dpfil/train"
)

// ResultsFile is the name of the append-only results log inside a sweep directory.
const ResultsFile = "results.jsonl"

// Record is one line of results.jsonl: a finished run. Config and Result are kept as
// the raw JSON the trainer produced, so merging and re-reading never drop fields.
type Record struct {
	Hash     string          `json:"hash"`
	Index    int             `json:"index"` // position in the expanded grid (-1: a run read from its own directory, ReadRun)
	Grid     string          `json:"grid,omitempty"`
	Finished time.Time       `json:"finished"`
	Config   json.RawMessage `json:"config"`
	Result   json.RawMessage `json:"result"`
}

// Metrics are the headline numbers of a train.Result under their JSON names, read by
// train's one reader of result files (null is +Inf for ε, ε₂ and the MSE bounds, NaN
// for the accuracy and the dFIL statistics; a missing field is 0).
type Metrics = train.Metrics

// Metrics decodes the headline numbers of the record's result.
func (r Record) Metrics() (Metrics, error) {
	var m Metrics
	if err := json.Unmarshal(r.Result, &m); err != nil {
		return Metrics{}, fmt.Errorf("record %s: decode result: %w", r.Hash, err)
	}
	return m, nil
}

// Validate checks that the record has a hash and JSON objects for config and result.
func (r Record) Validate() error {
	if r.Hash == "" {
		return errors.New("record has no hash")
	}
	if !isJSONObject(r.Config) {
		return fmt.Errorf("record %s: config is not a JSON object", r.Hash)
	}
	if !isJSONObject(r.Result) {
		return fmt.Errorf("record %s: result is not a JSON object", r.Hash)
	}
	return nil
}

func isJSONObject(b json.RawMessage) bool {
	b = bytes.TrimSpace(b)
	return len(b) >= 2 && b[0] == '{' && json.Valid(b)
}

// BadLine describes a line of a results file that could not be used: a torn last
// line left by a killed writer, or corrupt content.
type BadLine struct {
	File   string `json:"file"`
	Line   int    `json:"line"`
	Reason string `json:"reason"`
}

func (b BadLine) String() string { return fmt.Sprintf("%s:%d: %s", b.File, b.Line, b.Reason) }

// maxLine bounds one results line (a result with per-class accuracies is a few KiB).
const maxLine = 64 << 20

// ReadResults reads a results.jsonl file. A missing file is an empty result set.
// Lines that do not decode into a valid Record (typically a torn last line after a
// crash) are skipped and reported in bad; they are never fatal.
func ReadResults(path string) (recs []Record, bad []BadLine, err error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("open results: %w", err)
	}
	defer f.Close()
	return readResults(f, path)
}

func readResults(r io.Reader, name string) (recs []Record, bad []BadLine, err error) {
	br := bufio.NewReaderSize(r, 1<<16)
	for line := 1; ; line++ {
		b, rerr := br.ReadBytes('\n')
		if len(b) > maxLine {
			return nil, nil, fmt.Errorf("%s:%d: line longer than %d bytes", name, line, maxLine)
		}
		if t := bytes.TrimSpace(b); len(t) > 0 {
			var rec Record
			switch {
			case rerr == io.EOF && b[len(b)-1] != '\n' && !json.Valid(t):
				bad = append(bad, BadLine{name, line, "torn last line (no newline, incomplete JSON)"})
			default:
				if derr := json.Unmarshal(t, &rec); derr != nil {
					bad = append(bad, BadLine{name, line, "invalid JSON: " + derr.Error()})
				} else if verr := rec.Validate(); verr != nil {
					bad = append(bad, BadLine{name, line, verr.Error()})
				} else {
					recs = append(recs, rec)
				}
			}
		}
		if rerr == io.EOF {
			return recs, bad, nil
		}
		if rerr != nil {
			return nil, nil, fmt.Errorf("read %s: %w", name, rerr)
		}
	}
}

// Log appends records to a results file. Each record is one write(2) of one line to a
// file opened with O_APPEND, followed by fsync, so a crash leaves at most one torn
// last line, which ReadResults skips. Log is safe for concurrent use by goroutines;
// separate processes must use separate files (see Plan, which gives each shard its
// own directory).
type Log struct {
	mu   sync.Mutex
	f    *os.File
	path string
}

// OpenLog opens (creating if needed) the results file at path for appending. If the
// file ends in a torn line, a newline is written first so the next record starts on
// a fresh line and the torn fragment stays a separate, skippable line.
func OpenLog(path string) (*Log, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("results dir: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open results log: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("stat results log: %w", err)
	}
	if st.Size() > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, st.Size()-1); err != nil {
			f.Close()
			return nil, fmt.Errorf("read results log tail: %w", err)
		}
		if last[0] != '\n' {
			if _, err := f.Write([]byte{'\n'}); err != nil {
				f.Close()
				return nil, fmt.Errorf("terminate torn line: %w", err)
			}
		}
	}
	return &Log{f: f, path: path}, nil
}

// Append writes one record as one line and syncs it to disk.
func (l *Log) Append(rec Record) error {
	if err := rec.Validate(); err != nil {
		return fmt.Errorf("append: %w", err)
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("append %s: encode: %w", rec.Hash, err)
	}
	b = append(b, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.f.Write(b); err != nil {
		return fmt.Errorf("append %s to %s: %w", rec.Hash, l.path, err)
	}
	if err := l.f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", l.path, err)
	}
	return nil
}

// Close closes the file.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", l.path, err)
	}
	return nil
}

// Conflict is a configuration hash that two inputs finished with different results.
type Conflict struct {
	Hash   string   `json:"hash"`
	Kept   string   `json:"kept"`   // where the kept record came from
	Other  string   `json:"other"`  // where the differing record came from
	Fields []string `json:"fields"` // metrics that differ
}

// MergeReport summarises a merge.
type MergeReport struct {
	Inputs     int        `json:"inputs"`
	Read       int        `json:"read"`       // valid records read
	Unique     int        `json:"unique"`     // records in the output
	Duplicates int        `json:"duplicates"` // identical-result repeats dropped
	Conflicts  []Conflict `json:"conflicts"`
	BadLines   []BadLine  `json:"bad_lines"`
}

// relTol is the relative tolerance under which two metrics count as equal: reruns of
// one configuration with one seed are deterministic up to float summation order.
const relTol = 1e-9

// diffMetrics lists the metrics on which a and b differ.
func diffMetrics(a, b Metrics) []string {
	type kv struct {
		name string
		x, y float64
	}
	var diff []string
	for _, f := range []kv{
		{"test_accuracy", a.TestAccuracy, b.TestAccuracy},
		{"epsilon", a.Epsilon, b.Epsilon},
		{"rdp_order2", a.RDPOrder2, b.RDPOrder2},
		{"mse_bound_rdp", a.MSEBoundRDP, b.MSEBoundRDP},
		{"dfil_max", a.DFILMax, b.DFILMax},
		{"dfil_median", a.DFILMedian, b.DFILMedian},
		{"dfil_mean", a.DFILMean, b.DFILMean},
		{"mse_bound_fil_max", a.MSEBoundFILMax, b.MSEBoundFILMax},
		{"mse_bound_fil_median", a.MSEBoundFILMedian, b.MSEBoundFILMedian},
	} {
		if f.x == f.y || (math.IsNaN(f.x) && math.IsNaN(f.y)) { // also equal infinities, and null read twice
			continue
		}
		if math.IsNaN(f.x) || math.IsNaN(f.y) || math.Abs(f.x-f.y) > relTol*math.Max(math.Abs(f.x), math.Abs(f.y)) {
			diff = append(diff, f.name)
		}
	}
	return diff
}

// Source is a named list of records (e.g. one results.jsonl).
type Source struct {
	Name    string
	Records []Record
}

// Merge combines sources, keeping the first record of each hash (sources in the given
// order, records in file order). A later record with the same hash and the same
// metrics is a duplicate; one with different metrics is a conflict, reported and not
// kept. The output is sorted by grid index, then hash.
func Merge(srcs []Source) ([]Record, MergeReport, error) {
	rep := MergeReport{Inputs: len(srcs), Conflicts: []Conflict{}, BadLines: []BadLine{}}
	type kept struct {
		rec Record
		m   Metrics
		src string
	}
	byHash := map[string]*kept{}
	var out []Record
	for _, s := range srcs {
		for _, r := range s.Records {
			rep.Read++
			m, err := r.Metrics()
			if err != nil {
				return nil, rep, fmt.Errorf("merge %s: %w", s.Name, err)
			}
			if k, ok := byHash[r.Hash]; ok {
				if d := diffMetrics(k.m, m); len(d) > 0 {
					rep.Conflicts = append(rep.Conflicts, Conflict{Hash: r.Hash, Kept: k.src, Other: s.Name, Fields: d})
				} else {
					rep.Duplicates++
				}
				continue
			}
			byHash[r.Hash] = &kept{rec: r, m: m, src: s.Name}
			out = append(out, r)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Index != out[j].Index {
			return out[i].Index < out[j].Index
		}
		return out[i].Hash < out[j].Hash
	})
	rep.Unique = len(out)
	return out, rep, nil
}

// WriteResults atomically replaces path with the given records (temp file, fsync,
// rename).
func WriteResults(path string, recs []Record) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("results dir: %w", err)
	}
	err := atomicfile.Write(path, func(w io.Writer) error {
		for _, r := range recs {
			b, err := json.Marshal(r)
			if err != nil {
				return fmt.Errorf("encode %s: %w", r.Hash, err)
			}
			if _, err := w.Write(append(b, '\n')); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	return nil
}
