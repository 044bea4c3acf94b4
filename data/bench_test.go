package data

import (
	"bytes"
	"testing"
)

func BenchmarkDecodeIDXGzip(b *testing.B) {
	raw, err := embeddedFS.ReadFile(embeddedImages)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(10000 * 784)
	for b.Loop() {
		if _, err := DecodeIDX(bytes.NewReader(raw), "bench", 3); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLoadEmbedded(b *testing.B) {
	for b.Loop() {
		if _, err := Load("mnist-embedded", Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFingerprint(b *testing.B) {
	sp, err := Load("mnist-embedded", Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(sp.Train.Images)))
	for b.Loop() {
		_ = sp.Train.Fingerprint()
	}
}

func BenchmarkSubset(b *testing.B) {
	sp, err := Load("mnist-embedded", Options{})
	if err != nil {
		b.Fatal(err)
	}
	idx := Permutation(sp.Train.N, 1)[:256]
	for b.Loop() {
		_ = sp.Train.Subset(idx)
	}
}
