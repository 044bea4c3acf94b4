package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// addJSONFlag registers the --json flag every result-producing command carries.
func addJSONFlag(cmd *cobra.Command, dst *bool) {
	cmd.Flags().BoolVar(dst, "json", false, "print one JSON object on stdout instead of the human summary")
}

// addSeedFlag registers --seed; every random draw of the command flows from it.
func addSeedFlag(cmd *cobra.Command, dst *uint64) {
	cmd.Flags().Uint64Var(dst, "seed", 1, "seed for every random draw")
}

// emit prints v as one indented JSON object when asJSON is set, and otherwise calls
// human to write the human summary.
func emit(w io.Writer, asJSON bool, v any, human func(io.Writer)) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(v); err != nil {
			return fmt.Errorf("encode JSON result: %w", err)
		}
		return nil
	}
	human(w)
	return nil
}

// progress reports the advance of long work: a progress bar on an interactive
// terminal, plain log lines on stderr otherwise (CI, pipes, files). It is silent when
// quiet is set (e.g. --json output to a pipe still logs to stderr; quiet is for tests).
type progress struct {
	bar      *progressbar.ProgressBar
	total    int64
	done     int64
	every    int64
	label    string
	w        io.Writer
	disabled bool
}

// newProgress starts a progress report for total units of work.
func newProgress(total int64, label string, quiet bool) *progress {
	p := &progress{total: total, label: label, w: os.Stderr, disabled: quiet}
	if quiet {
		return p
	}
	if term.IsTerminal(int(os.Stderr.Fd())) {
		p.bar = progressbar.NewOptions64(total,
			progressbar.OptionSetWriter(os.Stderr),
			progressbar.OptionSetDescription(label),
			progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionClearOnFinish(),
			progressbar.OptionThrottle(100e6),
		)
		return p
	}
	p.every = total / 10
	if p.every < 1 {
		p.every = 1
	}
	return p
}

// Add advances the report by n units; msg (may be empty) describes the current state.
func (p *progress) Add(n int64, msg string) {
	if p.disabled {
		return
	}
	p.done += n
	if p.bar != nil {
		if msg != "" {
			p.bar.Describe(p.label + " " + msg)
		}
		_ = p.bar.Add64(n)
		return
	}
	if p.done%p.every == 0 || p.done == p.total {
		fmt.Fprintf(p.w, "%s %d/%d %s\n", p.label, p.done, p.total, msg)
	}
}

// Finish closes the progress bar.
func (p *progress) Finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}
