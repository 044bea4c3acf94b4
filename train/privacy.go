package train

import (
	"fmt"

	"github.com/dpfil/dpfil/accounting"
)

// dpsgd describes the run's releases for the accountants.
func (s *setup) dpsgd() accounting.DPSGD {
	return accounting.DPSGD{Sampling: s.sampling, N: s.n, Batch: s.cfg.Batch, Steps: s.steps, NoiseMultiplier: s.cfg.Sigma / s.c}
}

// privacy derives the run's privacy report from the ledger the run emitted.
func (s *setup) privacy(l accounting.Ledger) (*accounting.Report, error) {
	r, err := accounting.NewReport(l, accounting.ReportOptions{Delta: s.cfg.Delta, Accountant: s.cfg.Accountant,
		FILDelta: s.filDelta, ClipConstant: s.c})
	if err != nil {
		return nil, fmt.Errorf("privacy accounting: %w", err)
	}
	return r, nil
}

// emit records the privacy event of step t (0-based), if it starts one.
func (w *worker) emit(t int) error {
	if w.s.cfg.Sigma == 0 {
		return nil
	}
	e, ok := w.s.dpsgd().StepEvent(t)
	if !ok {
		return nil
	}
	if err := w.ledger.Add(e, 1); err != nil {
		return err
	}
	return w.progress.Compose(e)
}
