package sweep

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/dpfil/dpfil/train"
)

// ReadRun reads a single run's result (a run directory's result.json, or the file
// itself) as a Record: the hash is its config's (train.Config.Hash, as a sweep
// records it), Index is -1 (the run is not from a grid), Finished the file's
// modification time. A directory with a checkpoint but no result is an unfinished
// run, and the error says how to resume it.
func ReadRun(path string) (Record, error) {
	file := path
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		file = filepath.Join(path, train.ResultFile)
		if _, err := os.Stat(file); errors.Is(err, fs.ErrNotExist) {
			return Record{}, noRunError(path)
		}
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return Record{}, fmt.Errorf("results: %w", err)
	}
	rec, ok, err := runRecord(b)
	if err != nil {
		return Record{}, fmt.Errorf("%s: %w", file, err)
	}
	if !ok {
		return Record{}, fmt.Errorf("%s is not a run's result.json (want a JSON object with config and test_accuracy)", file)
	}
	if fi, err := os.Stat(file); err == nil {
		rec.Finished = fi.ModTime().UTC()
	}
	return rec, nil
}

// noRunError says why directory dir holds no run result: an unfinished run (a
// checkpoint), or nothing dpfil wrote.
func noRunError(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, train.CheckpointFile)); err == nil {
		return fmt.Errorf("%s is an unfinished run (a checkpoint, no %s): resume it with 'dpfil train --resume %s'", dir, train.ResultFile, dir)
	}
	return fmt.Errorf("%s holds no %s (a sweep directory), %s (a run directory) or run directories", dir, ResultsFile, train.ResultFile)
}

// runRecord decodes b as a run's result.json; ok is false when b is not one (not a
// single JSON object with config and test_accuracy but no result field, which a
// results.jsonl record has).
func runRecord(b []byte) (rec Record, ok bool, err error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' || !json.Valid(b) {
		return Record{}, false, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return Record{}, false, nil
	}
	_, hasCfg := fields["config"]
	_, hasAcc := fields["test_accuracy"]
	_, hasResult := fields["result"]
	if !hasCfg || !hasAcc || hasResult {
		return Record{}, false, nil
	}
	var cfg train.Config
	if err := json.Unmarshal(fields["config"], &cfg); err != nil {
		return Record{}, true, fmt.Errorf("decode config: %w", err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, b); err != nil {
		return Record{}, true, fmt.Errorf("compact result: %w", err)
	}
	rec = Record{Hash: cfg.Hash(), Index: -1, Config: fields["config"], Result: compact.Bytes()}
	if err := rec.Validate(); err != nil {
		return Record{}, true, err
	}
	return rec, true, nil
}

// addAny adds input p of ReadInputs: a sweep directory or results file (add), a run
// directory or result.json (ReadRun), or a directory of run directories.
func (in *inputs) addAny(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return fmt.Errorf("%s: %w", in.prefix, err)
	}
	if !fi.IsDir() {
		b, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("%s: %w", in.prefix, err)
		}
		if _, ok, _ := runRecord(b); ok {
			return in.addRun(p)
		}
		return in.add(p, true, true)
	}
	if _, err := os.Stat(ResultsPath(p)); err == nil {
		return in.add(p, true, true)
	}
	if _, err := os.Stat(filepath.Join(p, train.ResultFile)); err == nil {
		return in.addRun(p)
	}
	ents, err := os.ReadDir(p)
	if err != nil {
		return fmt.Errorf("%s: %w", in.prefix, err)
	}
	var runs []string
	for _, e := range ents {
		if e.IsDir() {
			if _, err := os.Stat(filepath.Join(p, e.Name(), train.ResultFile)); err == nil {
				runs = append(runs, filepath.Join(p, e.Name()))
			}
		}
	}
	if len(runs) == 0 {
		return noRunError(p)
	}
	sort.Strings(runs)
	for _, r := range runs {
		if err := in.addRun(r); err != nil {
			return err
		}
	}
	return nil
}

// first reports whether file is named for the first time (by its absolute path),
// and remembers it.
func (in *inputs) first(file string) bool {
	abs, _ := filepath.Abs(file)
	if in.seen[abs] {
		return false
	}
	if in.seen == nil {
		in.seen = map[string]bool{}
	}
	in.seen[abs] = true
	return true
}

// addRun adds the run of directory or result.json p as a source of one record.
func (in *inputs) addRun(p string) error {
	rec, err := ReadRun(p)
	if err != nil {
		return err
	}
	name := p
	if fi, err := os.Stat(p); err == nil && fi.IsDir() {
		name = filepath.Join(p, train.ResultFile)
	}
	if !in.first(name) {
		return nil
	}
	in.srcs = append(in.srcs, Source{Name: name, Records: []Record{rec}})
	return nil
}
