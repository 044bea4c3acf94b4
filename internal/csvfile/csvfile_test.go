package csvfile

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
)

// TestWriteReadsBack writes a table into a directory that does not exist yet and
// reads it back with encoding/csv; quoting survives and the file is complete.
func TestWriteReadsBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "t.csv")
	header := []string{"index", "note"}
	rows := [][]string{{"0", "plain"}, {"1", `a "quoted", comma`}}
	if err := Write(path, header, rows); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if want := append([][]string{header}, rows...); !reflect.DeepEqual(got, want) {
		t.Fatalf("read back %q, want %q", got, want)
	}
	if err := Write(filepath.Join(path, "under-a-file.csv"), header, rows); err == nil {
		t.Fatal("writing below a regular file succeeded")
	}
}

// TestFormatFloat: 10 significant digits, which read back within 5e-10 relative,
// and the exact short forms of round numbers.
func TestFormatFloat(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want string
	}{{0.1, "0.1"}, {1.0 / 3, "0.3333333333"}, {123456789012, "1.23456789e+11"}, {-2.5e-7, "-2.5e-07"}} {
		if got := FormatFloat(tc.v); got != tc.want {
			t.Errorf("FormatFloat(%v) = %q, want %q", tc.v, got, tc.want)
		}
		back, err := strconv.ParseFloat(FormatFloat(tc.v), 64)
		if err != nil || (back-tc.v) > 5e-10*abs(tc.v) || (tc.v-back) > 5e-10*abs(tc.v) {
			t.Errorf("FormatFloat(%v) reads back as %v (%v)", tc.v, back, err)
		}
	}
}

func abs(v float64) float64 {
	if v < 0 {
		return -v
	}
	return v
}
