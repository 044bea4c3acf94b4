package data

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
)

// CIFAR-10 binary format: each record is 1 label byte then 3072 pixel bytes (1024 red,
// 1024 green, 1024 blue, each 32×32 row-major, i.e. CHW). Each batch file holds 10 000
// records.
const (
	cifarSide          = 32
	cifarChannels      = 3
	cifarRecordBytes   = 1 + cifarChannels*cifarSide*cifarSide
	cifarRecordsPerBin = 10000
)

// ReadCIFARBatch reads one CIFAR-10 binary batch file of exactly records records
// (10 000 for the real files) and appends its images (byte/255, CHW) and labels to the
// given slices.
func ReadCIFARBatch(path string, records int, images []float32, labels []int) ([]float32, []int, error) {
	f, err := os.Open(path)
	if err != nil {
		return images, labels, fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return images, labels, fmt.Errorf("stat %s: %w", path, err)
	}
	want := int64(records) * cifarRecordBytes
	if st.Size() != want {
		return images, labels, fmt.Errorf("%s: %d bytes, want %d (%d records of 1 label byte + 3072 pixel bytes)", path, st.Size(), want, records)
	}
	return decodeCIFAR(f, path, records, images, labels)
}

// decodeCIFAR streams records records from r.
func decodeCIFAR(r io.Reader, name string, records int, images []float32, labels []int) ([]float32, []int, error) {
	var lut [256]float32
	for i := range lut {
		lut[i] = float32(i) / 255
	}
	br := bufio.NewReaderSize(r, 1<<16)
	var rec [cifarRecordBytes]byte
	for k := 0; k < records; k++ {
		if _, err := io.ReadFull(br, rec[:]); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return images, labels, fmt.Errorf("%s: truncated at record %d of %d", name, k, records)
			}
			return images, labels, fmt.Errorf("%s: reading record %d: %w", name, k, err)
		}
		if rec[0] >= 10 {
			return images, labels, fmt.Errorf("%s: label %d of record %d outside [0,10)", name, rec[0], k)
		}
		labels = append(labels, int(rec[0]))
		for _, b := range rec[1:] {
			images = append(images, lut[b])
		}
	}
	return images, labels, nil
}

// loadCIFARFiles reads the given batch files (each of records records) into one dataset.
func loadCIFARFiles(name string, paths []string, records int) (*Dataset, error) {
	// Check every file's size before allocating for all of them.
	want := int64(records) * cifarRecordBytes
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("stat %s: %w", p, err)
		}
		if st.Size() != want {
			return nil, fmt.Errorf("%s: %d bytes, want %d (%d records of 1 label byte + 3072 pixel bytes)", p, st.Size(), want, records)
		}
	}
	dim := cifarChannels * cifarSide * cifarSide
	images := make([]float32, 0, len(paths)*records*dim)
	labels := make([]int, 0, len(paths)*records)
	var err error
	for _, p := range paths {
		images, labels, err = ReadCIFARBatch(p, records, images, labels)
		if err != nil {
			return nil, err
		}
	}
	d := &Dataset{Name: name, Source: paths[0], N: len(labels), C: cifarChannels, H: cifarSide, W: cifarSide, Classes: 10, Images: images, Labels: labels}
	d.SHA256 = d.Fingerprint()
	return d, nil
}
