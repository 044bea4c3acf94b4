package accounting

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/dpfil/dpfil/internal/atomicfile"
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

var (
	reDescr   = regexp.MustCompile(`'descr'\s*:\s*'([^']*)'`)
	reFortran = regexp.MustCompile(`'fortran_order'\s*:\s*(True|False)`)
	reShape   = regexp.MustCompile(`'shape'\s*:\s*\(([^)]*)\)`)
)

// DecodeNPY reads a 1-D (or N×1) float64 or float32 little-endian .npy array
// (format 1.x, 2.x or 3.x) and validates the header and the data length.
func DecodeNPY(r io.Reader) ([]float64, error) {
	pre := make([]byte, 8)
	if _, err := io.ReadFull(r, pre); err != nil {
		return nil, fmt.Errorf("npy: read magic: %w", err)
	}
	if string(pre[:6]) != npyMagic {
		return nil, errors.New("npy: bad magic (not a .npy file)")
	}
	var hlen int
	switch pre[6] {
	case 1:
		var b [2]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return nil, fmt.Errorf("npy: read header length: %w", err)
		}
		hlen = int(binary.LittleEndian.Uint16(b[:]))
	case 2, 3:
		var b [4]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return nil, fmt.Errorf("npy: read header length: %w", err)
		}
		hlen = int(binary.LittleEndian.Uint32(b[:]))
	default:
		return nil, fmt.Errorf("npy: unsupported format version %d.%d", pre[6], pre[7])
	}
	if hlen <= 0 || hlen > 1<<20 {
		return nil, fmt.Errorf("npy: implausible header length %d", hlen)
	}
	hb := make([]byte, hlen)
	if _, err := io.ReadFull(r, hb); err != nil {
		return nil, fmt.Errorf("npy: read header: %w", err)
	}
	h := string(hb)
	m := reDescr.FindStringSubmatch(h)
	if m == nil {
		return nil, errors.New("npy: header has no descr")
	}
	var size int
	switch m[1] {
	case "<f8":
		size = 8
	case "<f4":
		size = 4
	default:
		return nil, fmt.Errorf("npy: unsupported dtype %q (want <f8 or <f4)", m[1])
	}
	if f := reFortran.FindStringSubmatch(h); f == nil {
		return nil, errors.New("npy: header has no fortran_order")
	}
	sm := reShape.FindStringSubmatch(h)
	if sm == nil {
		return nil, errors.New("npy: header has no shape")
	}
	var dims []int
	for _, p := range strings.Split(sm[1], ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		v, err := strconv.Atoi(p)
		if err != nil || v < 0 {
			return nil, fmt.Errorf("npy: bad shape entry %q", p)
		}
		dims = append(dims, v)
	}
	var n int
	switch {
	case len(dims) == 1:
		n = dims[0]
	case len(dims) == 2 && dims[1] == 1:
		n = dims[0]
	default:
		return nil, fmt.Errorf("npy: shape %v is not a vector", dims)
	}
	if n > maxNPYElements {
		return nil, fmt.Errorf("npy: %d elements is more than the supported %d", n, maxNPYElements)
	}
	data := make([]byte, n*size)
	if _, err := io.ReadFull(r, data); err != nil {
		return nil, fmt.Errorf("npy: data truncated (want %d values): %w", n, err)
	}
	var extra [1]byte
	if k, _ := r.Read(extra[:]); k > 0 {
		return nil, fmt.Errorf("npy: trailing bytes after %d values", n)
	}
	out := make([]float64, n)
	for i := range out {
		if size == 8 {
			out[i] = math.Float64frombits(binary.LittleEndian.Uint64(data[8*i:]))
		} else {
			out[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:])))
		}
	}
	return out, nil
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
