package sweep

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/dpfil/dpfil/data"
	"github.com/dpfil/dpfil/train"
)

// TrainRunner returns the Runner that trains each job with train.RunWithTranscript
// (transcripts only where the job resumes one or asks for fil_refine_top) in its run
// directory with Resume set, so that an interrupted run continues from its last
// checkpoint and a finished-but-unrecorded run returns its stored result at once.
// Datasets are loaded once per (dataset, data_dir) and shared by the runs of the
// sweep. logf (may be nil) receives the trainer's log lines.
func TrainRunner(logf func(string, ...any)) Runner {
	return TrainRunnerModels(logf, nil)
}

// TrainRunnerModels is TrainRunner for a program with registered models: a job
// whose model is one of reg's (ExpandModels) trains a fresh instance of it
// (train.Registry.Resolve); a job naming a registered model reg lacks fails.
func TrainRunnerModels(logf func(string, ...any), reg train.Registry) Runner {
	type entry struct {
		once  sync.Once
		split *data.Split
		err   error
	}
	var (
		mu    sync.Mutex
		cache = map[string]*entry{}
	)
	load := func(cfg train.Config) (*data.Split, error) {
		key := cfg.Dataset + "\x00" + cfg.DataDir
		mu.Lock()
		e, ok := cache[key]
		if !ok {
			e = &entry{}
			cache[key] = e
		}
		mu.Unlock()
		e.once.Do(func() {
			e.split, e.err = data.Load(cfg.Dataset, data.Options{DataDir: cfg.DataDir, Logf: logf})
		})
		return e.split, e.err
	}
	return func(ctx context.Context, job Job, dir string) (json.RawMessage, error) {
		split, err := load(job.Config)
		if err != nil {
			return nil, fmt.Errorf("load dataset %s: %w", job.Config.Dataset, err)
		}
		cfg, m, err := reg.Resolve(job.Config)
		if err != nil {
			return nil, err
		}
		res, err := train.RunWithTranscript(ctx, cfg, train.Options{Out: dir, Resume: true, Logf: logf, Data: split, Model: m}, false)
		if err != nil {
			return nil, err
		}
		b, err := json.Marshal(res)
		if err != nil {
			return nil, fmt.Errorf("encode result: %w", err)
		}
		return b, nil
	}
}
