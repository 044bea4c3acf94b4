package main

import (
	"encoding/json"
	"fmt"
	"io"

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

// progress reports the advance of long work on stderr (internal/termprogress).
type progress = termprogress.Reporter

// newProgress starts a progress report for total units of work on stderr: a bar on
// a terminal, plain lines otherwise, nothing when quiet.
func newProgress(total int64, label string, quiet bool) *progress {
	return termprogress.Stderr(total, label, quiet)
}

// emitReport prints a library report r — as JSON with asJSON, else its WriteText —
// and returns err. A nil r (the call failed before it had anything to report) prints
// nothing; a report that comes with an error (e.g. failed runs) is printed first.
func emitReport[R any, P interface {
	*R
	WriteText(io.Writer)
}](cmd *cobra.Command, asJSON bool, r P, err error) error {
	if r == nil {
		return err
	}
	if perr := emit(cmd.OutOrStdout(), asJSON, r, r.WriteText); perr != nil {
		return perr
	}
	return err
}
