package data

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/dpfil/dpfil/internal/splitmix"
)

// idxBytes encodes an IDX file with the given magic, dimensions and data.
func idxBytes(magic uint32, dims []uint32, data []byte) []byte {
	var b bytes.Buffer
	_ = binary.Write(&b, binary.BigEndian, magic)
	for _, d := range dims {
		_ = binary.Write(&b, binary.BigEndian, d)
	}
	b.Write(data)
	return b.Bytes()
}

// gzBytes gzip-compresses b.
func gzBytes(t testing.TB, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func writeFile(t testing.TB, dir, name string, b []byte) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// fixturePixels returns n·dim deterministic pseudo-random bytes covering 0..255.
func fixturePixels(n, dim int, seed uint64) []byte {
	state := seed
	b := make([]byte, n*dim)
	for i := range b {
		b[i] = byte(splitmix.Next(&state))
	}
	if len(b) >= 2 {
		b[0], b[1] = 0, 255
	}
	return b
}

// mnistFixture is a small MNIST-format dataset written to disk.
type mnistFixture struct {
	trainPix, testPix       []byte
	trainLabels, testLabels []byte
}

// imagesIDX, labelsIDX encode a part of the fixture.
func imagesIDX(pix []byte) []byte {
	return idxBytes(idxImagesMagic, []uint32{uint32(len(pix) / 784), 28, 28}, pix)
}

func labelsIDX(labels []byte) []byte {
	return idxBytes(idxLabelsMagic, []uint32{uint32(len(labels))}, labels)
}

// newMNISTFixture makes nTrain/nTest images with labels i%10 (so every class appears
// when n ≥ 10).
func newMNISTFixture(nTrain, nTest int, seed uint64) mnistFixture {
	f := mnistFixture{
		trainPix: fixturePixels(nTrain, 784, seed),
		testPix:  fixturePixels(nTest, 784, seed+1),
	}
	for i := 0; i < nTrain; i++ {
		f.trainLabels = append(f.trainLabels, byte(i%10))
	}
	for i := 0; i < nTest; i++ {
		f.testLabels = append(f.testLabels, byte((i*7)%10))
	}
	return f
}

// files returns the four IDX files (gz or raw) keyed by canonical .gz name.
func (f mnistFixture) files(t testing.TB, gz bool) map[string][]byte {
	raw := map[string][]byte{
		"train-images-idx3-ubyte.gz": imagesIDX(f.trainPix),
		"train-labels-idx1-ubyte.gz": labelsIDX(f.trainLabels),
		"t10k-images-idx3-ubyte.gz":  imagesIDX(f.testPix),
		"t10k-labels-idx1-ubyte.gz":  labelsIDX(f.testLabels),
	}
	if gz {
		for k, v := range raw {
			raw[k] = gzBytes(t, v)
		}
	}
	return raw
}

// write writes the fixture into dir, gzip-compressed (canonical names) or raw (names
// without .gz).
func (f mnistFixture) write(t testing.TB, dir string, gz bool) {
	t.Helper()
	for name, b := range f.files(t, gz) {
		if !gz {
			name = name[:len(name)-3]
		}
		writeFile(t, dir, name, b)
	}
}

// cifarBatch encodes records with the given labels and pixels (3072 bytes each).
func cifarBatch(labels []byte, pix []byte) []byte {
	var b bytes.Buffer
	for i, y := range labels {
		b.WriteByte(y)
		b.Write(pix[i*3072 : (i+1)*3072])
	}
	return b.Bytes()
}

// writeCIFARFixture writes the six batch files with records records each into dir and
// returns the pixels and labels of the train (5 files) and test parts.
func writeCIFARFixture(t testing.TB, dir string, records int) (trainPix, testPix []byte, trainLab, testLab []byte) {
	t.Helper()
	for k, name := range append(cifarTrainNames(), cifarTestNames()...) {
		pix := fixturePixels(records, 3072, uint64(100+k))
		var lab []byte
		for i := 0; i < records; i++ {
			lab = append(lab, byte((i+k)%10))
		}
		writeFile(t, dir, name, cifarBatch(lab, pix))
		if k < 5 {
			trainPix, trainLab = append(trainPix, pix...), append(trainLab, lab...)
		} else {
			testPix, testLab = pix, lab
		}
	}
	return trainPix, testPix, trainLab, testLab
}
