package data

import (
	"bytes"
	"testing"
)

// FuzzDecodeIDX feeds arbitrary bytes to the IDX decoder, raw and as 1-, 2- and
// 3-dimensional files: it must never panic, and whatever it accepts must be consistent.
// Run with: go test ./data -run '^$' -fuzz FuzzDecodeIDX -fuzztime 30s
func FuzzDecodeIDX(f *testing.F) {
	pix := fixturePixels(2, 784, 1)
	f.Add(imagesIDX(pix))
	f.Add(gzBytes(f, imagesIDX(pix)))
	f.Add(labelsIDX([]byte{1, 2, 3}))
	f.Add(gzBytes(f, labelsIDX([]byte{1, 2, 3})))
	f.Add(idxBytes(idxImagesMagic, []uint32{0xffffffff, 0xffffffff, 28}, nil))
	f.Add([]byte{0x1f, 0x8b})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, nd := range []int{1, 2, 3} {
			x, err := DecodeIDX(bytes.NewReader(b), "fuzz", nd)
			if err != nil {
				continue
			}
			n := 1
			for _, d := range x.Dims {
				n *= d
			}
			if len(x.Dims) != nd || len(x.Data) != n || len(x.ContentSHA256) != 64 {
				t.Fatalf("accepted inconsistent file: dims %v, %d bytes", x.Dims, len(x.Data))
			}
		}
	})
}

// FuzzDecodeCIFAR feeds arbitrary bytes to the CIFAR-10 record decoder.
func FuzzDecodeCIFAR(f *testing.F) {
	f.Add(cifarBatch([]byte{3}, fixturePixels(1, 3072, 1)), 1)
	f.Add([]byte{10}, 1)
	f.Fuzz(func(t *testing.T, b []byte, records int) {
		if records < 0 || records > 4 {
			return
		}
		imgs, labels, err := decodeCIFAR(bytes.NewReader(b), "fuzz", records, nil, nil)
		if err == nil && (len(labels) != records || len(imgs) != records*3072) {
			t.Fatalf("accepted %d labels, %d values for %d records", len(labels), len(imgs), records)
		}
	})
}
