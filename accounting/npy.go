package accounting

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"github.com/dpfil/dpfil/internal/atomicfile"
	"github.com/dpfil/dpfil/internal/npy"
)

const npyMagic = "\x93NUMPY"

// maxNPYElements bounds the array length read from a header (1 G elements), so that
// a corrupt header cannot request an absurd allocation.
const maxNPYElements = 1 << 30

// EncodeNPY writes x as a NumPy .npy (format 1.0) little-endian float64 1-D array.
func EncodeNPY(w io.Writer, x []float64) error {
	header := fmt.Sprintf("{'descr': '<f8', 'fortran_order': False, 'shape': (%d,), }", len(x))
	// Pad so that magic(6)+version(2)+len(2)+header is a multiple of 64, ending in \n.
	total := 10 + len(header) + 1
	pad := (64 - total%64) % 64
	header += strings.Repeat(" ", pad) + "\n"
	if len(header) > math.MaxUint16 {
		return errors.New("npy header too long")
	}
	var buf bytes.Buffer
	buf.WriteString(npyMagic)
	buf.Write([]byte{1, 0})
	_ = binary.Write(&buf, binary.LittleEndian, uint16(len(header)))
	buf.WriteString(header)
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("write npy header: %w", err)
	}
	data := make([]byte, 8*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint64(data[8*i:], math.Float64bits(v))
	}
	if _, err := w.Write(data); err != nil {
		return fmt.Errorf("write npy data: %w", err)
	}
	return nil
}

// DecodeNPY reads a 1-D (or N×1) float64 or float32 little-endian .npy array
// (format 1.x, 2.x or 3.x; parsed by internal/npy) and validates the dtype, the shape
// and the data length.
func DecodeNPY(r io.Reader) ([]float64, error) {
	a, err := npy.Read(r)
	if err != nil {
		return nil, err
	}
	if a.Dtype != "<f8" && a.Dtype != "<f4" {
		return nil, fmt.Errorf("npy: unsupported dtype %q (want <f8 or <f4)", a.Dtype)
	}
	switch {
	case len(a.Shape) == 1, len(a.Shape) == 2 && a.Shape[1] == 1:
	default:
		return nil, fmt.Errorf("npy: shape %v is not a vector", a.Shape)
	}
	if len(a.Data) > maxNPYElements {
		return nil, fmt.Errorf("npy: %d elements is more than the supported %d", len(a.Data), maxNPYElements)
	}
	return a.Data, nil
}

// SaveDFIL writes per-sample dFIL as a .npy float64 vector, atomically (a temporary
// file in the same directory, synced, then renamed).
func SaveDFIL(path string, dfil []float64) error {
	for i, v := range dfil {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return fmt.Errorf("save dFIL %s: sample %d has invalid dFIL %v", path, i, v)
		}
	}
	if err := atomicfile.Write(path, func(w io.Writer) error { return EncodeNPY(w, dfil) }); err != nil {
		return fmt.Errorf("save dFIL: %w", err)
	}
	return nil
}

// LoadDFIL reads a per-sample dFIL vector written by SaveDFIL (or numpy.save of a
// float64/float32 vector). Corrupt files and non-finite or negative values are
// errors.
func LoadDFIL(path string) ([]float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("load dFIL: %w", err)
	}
	defer f.Close()
	x, err := DecodeNPY(f)
	if err != nil {
		return nil, fmt.Errorf("load dFIL %s: %w", path, err)
	}
	for i, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return nil, fmt.Errorf("load dFIL %s: sample %d has invalid dFIL %v", path, i, v)
		}
	}
	return x, nil
}
