package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/dpfil/dpfil/internal/termprogress"
	"github.com/spf13/cobra"
)

// addJSONFlag registers the --json flag every result-producing command carries.
func addJSONFlag(cmd *cobra.Command, dst *bool) {
	cmd.Flags().BoolVar(dst, "json", false, "print one JSON object on stdout instead of the human summary")
}

// addSeedFlag registers --seed; every random draw of the command flows from it.
func addSeedFlag(cmd *cobra.Command, dst *uint64) {
	cmd.Flags().Uint64Var(dst, "seed", 1, "seed for every random draw")
}

// addQuietFlag registers --quiet, which silences the progress report on stderr.
func addQuietFlag(cmd *cobra.Command, dst *bool) {
	cmd.Flags().BoolVar(dst, "quiet", false, "no progress output on stderr")
}

// markRequired marks flags as required and says so in their usage.
func markRequired(cmd *cobra.Command, names ...string) {
	for _, n := range names {
		_ = cmd.MarkFlagRequired(n)
		cmd.Flags().Lookup(n).Usage += " (required)"
	}
}

// changed returns v when the flag name was given on the command line, else nil: an
// optional number of a library request.
func changed[T any](cmd *cobra.Command, name string, v *T) *T {
	if cmd.Flags().Changed(name) {
		return v
	}
	return nil
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

// report is what the library's commands return: a *R that writes its human summary.
type report[R any] interface {
	*R
	WriteText(io.Writer)
}

// emitReport prints a library report r — as JSON with asJSON, else its WriteText —
// and returns err. A nil r (the call failed before it had anything to report) prints
// nothing; a report that comes with an error (e.g. failed runs) is printed first.
func emitReport[R any, P report[R]](cmd *cobra.Command, asJSON bool, r P, err error) error {
	if r == nil {
		return err
	}
	if perr := emit(cmd.OutOrStdout(), asJSON, r, r.WriteText); perr != nil {
		return perr
	}
	return err
}

// reportCmd completes c, a command that computes one library report: it adds --json
// and a RunE that calls run (flags already bound to the library's request) and prints
// the report with emitReport.
func reportCmd[R any, P report[R]](c *cobra.Command, run func(cmd *cobra.Command, args []string) (P, error)) *cobra.Command {
	var asJSON bool
	addJSONFlag(c, &asJSON)
	c.RunE = func(cmd *cobra.Command, args []string) error {
		r, err := run(cmd, args)
		return emitReport(cmd, asJSON, r, err)
	}
	return c
}

// progress reports the advance of long work on stderr (internal/termprogress).
type progress = termprogress.Reporter

// newProgress starts a progress report for total units of work on stderr: a bar on
// a terminal, plain lines otherwise, nothing when quiet.
func newProgress(total int64, label string, quiet bool) *progress {
	return termprogress.Stderr(total, label, quiet)
}

// finishProgress closes p if it was started.
func finishProgress(p *progress) {
	if p != nil {
		p.Finish()
	}
}

// lazyProgress starts a progress report at the first update, when the total is
// known; updates may come from several goroutines.
type lazyProgress struct {
	once  sync.Once
	p     *progress
	label string
	quiet bool
}

func (l *lazyProgress) add(n, total int) {
	l.once.Do(func() { l.p = newProgress(int64(total), l.label, l.quiet) })
	l.p.Add(int64(n), "")
}

func (l *lazyProgress) finish() { finishProgress(l.p) }

// stderrLogf logs lines to the command's stderr unless quiet.
func stderrLogf(cmd *cobra.Command, quiet bool) func(string, ...any) {
	return func(format string, args ...any) {
		if !quiet {
			fmt.Fprintf(cmd.ErrOrStderr(), format+"\n", args...)
		}
	}
}

// interruptContext is cancelled on SIGINT/SIGTERM, so that long work stops cleanly
// (at a checkpoint) and can be resumed.
func interruptContext(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
}
