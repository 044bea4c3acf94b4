// Package npy reads and writes NumPy .npy arrays of any shape and .npz archives
// of them: the numeric dtypes (little-endian or single-byte; bool), C order. Values
// are handed out as float64 (exact for every supported dtype but 64-bit integers
// beyond 2⁵³) together with the dtype, so that a caller can insist on integers.
package npy

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Array is one decoded array.
type Array struct {
	Name  string    // the key inside an .npz (file name without .npy); "" for an .npy
	Dtype string    // numpy descr, e.g. "|u1", "<f4"
	Shape []int     // C order
	Data  []float64 // product(Shape) values, row-major
}

// Integer reports whether the dtype is an integer or bool type.
func (a *Array) Integer() bool {
	k := a.Dtype[1]
	return k == 'u' || k == 'i' || k == 'b'
}

// Len is product(Shape).
func (a *Array) Len() int {
	n := 1
	for _, d := range a.Shape {
		n *= d
	}
	return n
}

const magic = "\x93NUMPY"

// MaxElements bounds the element count a header may declare (2 G values), so that
// a corrupt header cannot request an absurd allocation.
const MaxElements = 1 << 31

var (
	reDescr   = regexp.MustCompile(`'descr'\s*:\s*'([^']*)'`)
	reFortran = regexp.MustCompile(`'fortran_order'\s*:\s*(True|False)`)
	reShape   = regexp.MustCompile(`'shape'\s*:\s*\(([^)]*)\)`)
)

// itemSize returns the byte size of a supported dtype.
func itemSize(descr string) (int, error) {
	if len(descr) < 3 {
		return 0, fmt.Errorf("unsupported dtype %q", descr)
	}
	order, kind := descr[0], descr[1]
	n, err := strconv.Atoi(descr[2:])
	if err != nil {
		return 0, fmt.Errorf("unsupported dtype %q", descr)
	}
	switch {
	case order == '>' && n > 1:
		return 0, fmt.Errorf("big-endian dtype %q is not supported (convert with .astype('<%c%d'))", descr, kind, n)
	case order != '<' && order != '|' && order != '=' && !(order == '>' && n == 1):
		return 0, fmt.Errorf("unsupported dtype %q", descr)
	}
	switch kind {
	case 'u', 'i':
		if n == 1 || n == 2 || n == 4 || n == 8 {
			return n, nil
		}
	case 'f':
		if n == 4 || n == 8 {
			return n, nil
		}
	case 'b':
		if n == 1 {
			return 1, nil
		}
	}
	return 0, fmt.Errorf("unsupported dtype %q (want unsigned/signed integers, float32/float64 or bool)", descr)
}

// Read decodes one .npy array from r (format 1.x, 2.x or 3.x).
func Read(r io.Reader) (*Array, error) {
	pre := make([]byte, 8)
	if _, err := io.ReadFull(r, pre); err != nil {
		return nil, fmt.Errorf("npy: not a .npy file (cannot read the magic): %w", err)
	}
	if string(pre[:6]) != magic {
		return nil, errors.New("npy: not a .npy file (bad magic)")
	}
	var hlen int
	switch pre[6] {
	case 1:
		var b [2]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return nil, fmt.Errorf("npy: truncated header: %w", err)
		}
		hlen = int(binary.LittleEndian.Uint16(b[:]))
	case 2, 3:
		var b [4]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return nil, fmt.Errorf("npy: truncated header: %w", err)
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
		return nil, fmt.Errorf("npy: truncated header: %w", err)
	}
	h := string(hb)
	m := reDescr.FindStringSubmatch(h)
	if m == nil {
		return nil, fmt.Errorf("npy: header %q has no simple descr (structured arrays are not supported)", strings.TrimSpace(h))
	}
	size, err := itemSize(m[1])
	if err != nil {
		return nil, fmt.Errorf("npy: %w", err)
	}
	f := reFortran.FindStringSubmatch(h)
	if f == nil {
		return nil, errors.New("npy: header has no fortran_order")
	}
	if f[1] == "True" {
		return nil, errors.New("npy: Fortran-order arrays are not supported (save with np.ascontiguousarray)")
	}
	sm := reShape.FindStringSubmatch(h)
	if sm == nil {
		return nil, errors.New("npy: header has no shape")
	}
	a := &Array{Dtype: m[1], Shape: []int{}}
	total := 1
	for _, p := range strings.Split(sm[1], ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		v, err := strconv.Atoi(strings.TrimSuffix(p, "L"))
		if err != nil || v < 0 {
			return nil, fmt.Errorf("npy: bad shape %q", sm[1])
		}
		a.Shape = append(a.Shape, v)
		if v > 0 && total > MaxElements/v {
			return nil, fmt.Errorf("npy: shape %v has more than %d elements", a.Shape, MaxElements)
		}
		total *= v
	}
	raw := make([]byte, total*size)
	if _, err := io.ReadFull(r, raw); err != nil {
		return nil, fmt.Errorf("npy: data truncated: want %d bytes for shape %v of %s: %w", total*size, a.Shape, a.Dtype, err)
	}
	var extra [1]byte
	if n, _ := r.Read(extra[:]); n > 0 {
		return nil, fmt.Errorf("npy: trailing bytes after the %d data bytes of shape %v", total*size, a.Shape)
	}
	a.Data = make([]float64, total)
	kind := a.Dtype[1]
	for i := range a.Data {
		b := raw[i*size : (i+1)*size]
		var v float64
		switch {
		case kind == 'f' && size == 4:
			v = float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))
		case kind == 'f':
			v = math.Float64frombits(binary.LittleEndian.Uint64(b))
		case kind == 'u' || kind == 'b':
			switch size {
			case 1:
				v = float64(b[0])
			case 2:
				v = float64(binary.LittleEndian.Uint16(b))
			case 4:
				v = float64(binary.LittleEndian.Uint32(b))
			default:
				v = float64(binary.LittleEndian.Uint64(b))
			}
		default:
			switch size {
			case 1:
				v = float64(int8(b[0]))
			case 2:
				v = float64(int16(binary.LittleEndian.Uint16(b)))
			case 4:
				v = float64(int32(binary.LittleEndian.Uint32(b)))
			default:
				v = float64(int64(binary.LittleEndian.Uint64(b)))
			}
		}
		a.Data[i] = v
	}
	return a, nil
}

// ErrIsDir is the error ReadNPZFile returns (wrapped, with the path) for a directory.
var ErrIsDir = errors.New("is a directory, not an .npz file")

// ReadNPZFile reads the .npz archive at path (ReadNPZ) and returns its arrays by name.
func ReadNPZFile(path string) (map[string]*Array, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return nil, fmt.Errorf("%s %w", path, ErrIsDir)
	}
	arrs, err := ReadNPZ(f, st.Size())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	byName := make(map[string]*Array, len(arrs))
	for _, a := range arrs {
		byName[a.Name] = a
	}
	return byName, nil
}

// ReadNPZ decodes every array of an .npz archive (stored or deflated entries), in
// name order.
func ReadNPZ(r io.ReaderAt, size int64) ([]*Array, error) {
	zr, err := zip.NewReader(r, size)
	if err != nil {
		return nil, fmt.Errorf("npz: not a zip archive: %w", err)
	}
	var out []*Array
	seen := map[string]bool{}
	for _, f := range zr.File {
		if !strings.HasSuffix(f.Name, ".npy") {
			return nil, fmt.Errorf("npz: entry %q is not an .npy array", f.Name)
		}
		name := strings.TrimSuffix(f.Name, ".npy")
		if seen[name] {
			return nil, fmt.Errorf("npz: array %q appears twice", name)
		}
		seen[name] = true
		rc, err := f.Open()
		if err != nil {
			return nil, fmt.Errorf("npz: %s: %w", f.Name, err)
		}
		a, err := Read(rc)
		rc.Close()
		if err != nil {
			return nil, fmt.Errorf("npz: %s: %w", f.Name, err)
		}
		a.Name = name
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// header returns a format-1.0 header for descr and shape, padded to 64 bytes.
func header(descr string, shape []int) []byte {
	dims := make([]string, len(shape))
	for i, d := range shape {
		dims[i] = strconv.Itoa(d)
	}
	sh := strings.Join(dims, ", ")
	if len(shape) == 1 {
		sh += ","
	}
	h := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", descr, sh)
	pad := (64 - (10+len(h)+1)%64) % 64
	h += strings.Repeat(" ", pad) + "\n"
	var buf bytes.Buffer
	buf.WriteString(magic)
	buf.Write([]byte{1, 0})
	_ = binary.Write(&buf, binary.LittleEndian, uint16(len(h)))
	buf.WriteString(h)
	return buf.Bytes()
}

// encode returns the .npy encoding of v with the given dtype and shape, each value
// written by put into its size bytes.
func encode[T any](descr string, shape []int, v []T, size int, put func([]byte, T)) ([]byte, error) {
	n := 1
	for _, d := range shape {
		n *= d
	}
	if n != len(v) {
		return nil, fmt.Errorf("npy: shape %v holds %d values, got %d", shape, n, len(v))
	}
	b := header(descr, shape)
	data := make([]byte, size*len(v))
	for i, x := range v {
		put(data[size*i:], x)
	}
	return append(b, data...), nil
}

// EncodeFloat64 returns the .npy encoding of a float64 array of the given shape.
func EncodeFloat64(shape []int, v []float64) ([]byte, error) {
	return encode("<f8", shape, v, 8, func(b []byte, x float64) { binary.LittleEndian.PutUint64(b, math.Float64bits(x)) })
}

// EncodeFloat32 returns the .npy encoding of a float32 array of the given shape.
func EncodeFloat32(shape []int, v []float32) ([]byte, error) {
	return encode("<f4", shape, v, 4, func(b []byte, x float32) { binary.LittleEndian.PutUint32(b, math.Float32bits(x)) })
}

// EncodeUint8 returns the .npy encoding of a uint8 array of the given shape.
func EncodeUint8(shape []int, v []byte) ([]byte, error) {
	return encode("|u1", shape, v, 1, func(b []byte, x byte) { b[0] = x })
}

// EncodeInt64 returns the .npy encoding of an int64 array of the given shape.
func EncodeInt64(shape []int, v []int) ([]byte, error) {
	return encode("<i8", shape, v, 8, func(b []byte, x int) { binary.LittleEndian.PutUint64(b, uint64(int64(x))) })
}

// ReadVector reads a float vector: a 1-D (or N×1) little-endian float64 or float32
// array; other dtypes and shapes are errors.
func ReadVector(r io.Reader) ([]float64, error) {
	a, err := Read(r)
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
	return a.Data, nil
}

// Entry is one named, already encoded array of an .npz archive.
type Entry struct {
	Name string
	NPY  []byte
}

// WriteNPZ writes the entries as an uncompressed .npz archive (numpy.savez), with a
// fixed modification time so that equal arrays give equal bytes.
func WriteNPZ(w io.Writer, entries []Entry) error {
	zw := zip.NewWriter(w)
	for _, e := range entries {
		if e.Name == "" || strings.ContainsAny(e.Name, "/\\") {
			return fmt.Errorf("npz: bad array name %q", e.Name)
		}
		fw, err := zw.CreateHeader(&zip.FileHeader{Name: e.Name + ".npy", Method: zip.Store})
		if err != nil {
			return fmt.Errorf("npz: %w", err)
		}
		if _, err := fw.Write(e.NPY); err != nil {
			return fmt.Errorf("npz: %w", err)
		}
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("npz: %w", err)
	}
	return nil
}
