// Package csvfile writes the CSV tables of dpfil's experiments (GLM FIL, IRFIL,
// inversion and GLM-attack tables): one atomic write of a header and rows, and the
// one number format those tables use.
package csvfile

import (
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/dpfil/dpfil/internal/atomicfile"
)

// Write writes a header and rows atomically to path, creating its directory.
func Write(path string, header []string, rows [][]string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	return atomicfile.Write(path, func(w io.Writer) error {
		cw := csv.NewWriter(w)
		_ = cw.Write(header)
		_ = cw.WriteAll(rows)
		return cw.Error()
	})
}

// FormatFloat is the CSV form of a number: 10 significant digits.
func FormatFloat(v float64) string { return strconv.FormatFloat(v, 'g', 10, 64) }
