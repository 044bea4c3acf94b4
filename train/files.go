package train

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/dpfil/dpfil/internal/atomicfile"
)

// Files of a run directory.
const (
	ResultFile     = "result.json"
	DFILFile       = "dfil.npy"
	ParamsFile     = "params.npy" // final parameters of repeat 0 (float32 .npy)
	CheckpointFile = "checkpoint.bin"
)

// paramsFileName is the parameter file of repeat r: params.npy, params_r1.npy, …
func paramsFileName(r int) string {
	if r == 0 {
		return ParamsFile
	}
	return fmt.Sprintf("params_r%d.npy", r)
}

// writeFileAtomic writes data to path so that a crash leaves either the old file or
// the complete new one.
func writeFileAtomic(path string, data []byte) error {
	return atomicfile.WriteFile(path, data)
}

// SaveParams writes a flat parameter vector as a little-endian float32 .npy file
// (shape [P]), atomically.
func SaveParams(path string, params []float32) error {
	var buf bytes.Buffer
	header := fmt.Sprintf("{'descr': '<f4', 'fortran_order': False, 'shape': (%d,), }", len(params))
	// Pad so that magic(6)+version(2)+len(2)+header+'\n' is a multiple of 64.
	pad := 64 - (10+len(header)+1)%64
	header += strings.Repeat(" ", pad%64) + "\n"
	buf.WriteString("\x93NUMPY\x01\x00")
	_ = binary.Write(&buf, binary.LittleEndian, uint16(len(header)))
	buf.WriteString(header)
	b := make([]byte, 4*len(params))
	for i, v := range params {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	buf.Write(b)
	return writeFileAtomic(path, buf.Bytes())
}

// LoadParams reads a parameter vector written by SaveParams.
func LoadParams(path string) ([]float32, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load params: %w", err)
	}
	if len(b) < 10 || string(b[:6]) != "\x93NUMPY" || b[6] != 1 {
		return nil, fmt.Errorf("load params %s: not a version-1 .npy file", path)
	}
	hl := int(binary.LittleEndian.Uint16(b[8:10]))
	if 10+hl > len(b) {
		return nil, fmt.Errorf("load params %s: truncated header", path)
	}
	h := string(b[10 : 10+hl])
	if !strings.Contains(h, "'descr': '<f4'") || !strings.Contains(h, "'fortran_order': False") {
		return nil, fmt.Errorf("load params %s: want little-endian float32 C-order data, header %q", path, strings.TrimSpace(h))
	}
	i := strings.Index(h, "'shape': (")
	if i < 0 {
		return nil, fmt.Errorf("load params %s: no shape in header", path)
	}
	rest := h[i+len("'shape': ("):]
	j := strings.Index(rest, ",)")
	if j < 0 {
		return nil, fmt.Errorf("load params %s: want a 1-D shape, header %q", path, strings.TrimSpace(h))
	}
	n, err := strconv.Atoi(rest[:j])
	if err != nil || n < 0 {
		return nil, fmt.Errorf("load params %s: bad shape %q", path, rest[:j])
	}
	data := b[10+hl:]
	if len(data) != 4*n {
		return nil, fmt.Errorf("load params %s: %d data bytes for %d float32 values", path, len(data), n)
	}
	out := make([]float32, n)
	for k := range out {
		out[k] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*k:]))
	}
	return out, nil
}
