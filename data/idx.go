package data

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
)

// IDX magic numbers (big-endian): two zero bytes, type 0x08 (unsigned byte), number of
// dimensions.
const (
	idxImagesMagic = 0x00000803
	idxLabelsMagic = 0x00000801
	// maxIDXElements bounds the element count an IDX header may declare (2³² − 1 would
	// otherwise be accepted; the largest real file, MNIST train images, has 47 040 000).
	maxIDXElements = 1 << 32
)

// IDX is a decoded IDX file of unsigned bytes.
type IDX struct {
	Dims          []int  // dimension sizes, e.g. [60000 28 28] for images, [60000] for labels
	Data          []byte // product(Dims) values, row-major
	ContentSHA256 string // hex SHA-256 of the uncompressed file (header and data)
}

// DecodeIDX reads one IDX file of unsigned bytes (type 0x08) from r, gzip-compressed or
// raw (detected from the first two bytes), and checks it has exactly ndims dimensions,
// no dimension of size zero except possibly the first, exactly product(Dims) data bytes
// and nothing after them. For gzip input the whole stream is read, so a CRC or length
// mismatch in the gzip trailer is reported. name is used in error messages only.
func DecodeIDX(r io.Reader, name string, ndims int) (*IDX, error) {
	if ndims < 1 || ndims > 255 {
		return nil, fmt.Errorf("%s: cannot decode an IDX file of %d dimensions", name, ndims)
	}
	br := bufio.NewReaderSize(r, 1<<16)
	head, err := br.Peek(2)
	if err != nil {
		return nil, fmt.Errorf("%s: empty or unreadable file, want an IDX file (optionally gzip): %w", name, eofAsTruncated(err))
	}
	var src io.Reader = br
	gz := head[0] == 0x1f && head[1] == 0x8b
	if gz {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%s: corrupt gzip header: %w", name, err)
		}
		defer zr.Close()
		src = bufio.NewReaderSize(zr, 1<<16)
	}
	hash := sha256.New()
	src = io.TeeReader(src, hash)
	var hdr [4]byte
	if _, err := io.ReadFull(src, hdr[:]); err != nil {
		return nil, fmt.Errorf("%s: truncated: cannot read the 4-byte IDX magic: %w", name, describeReadErr(err, gz))
	}
	magic := binary.BigEndian.Uint32(hdr[:])
	wantMagic := uint32(0x00000800 | ndims)
	if magic != wantMagic {
		return nil, fmt.Errorf("%s: wrong magic number 0x%08x, want 0x%08x (IDX unsigned bytes, %d dimensions)", name, magic, wantMagic, ndims)
	}
	dims := make([]int, ndims)
	total := uint64(1)
	for i := range dims {
		var b [4]byte
		if _, err := io.ReadFull(src, b[:]); err != nil {
			return nil, fmt.Errorf("%s: truncated: cannot read dimension %d of the IDX header: %w", name, i, describeReadErr(err, gz))
		}
		dims[i] = int(binary.BigEndian.Uint32(b[:]))
		if dims[i] == 0 && i > 0 {
			return nil, fmt.Errorf("%s: dimension %d is 0, want a positive size", name, i)
		}
		total *= uint64(binary.BigEndian.Uint32(b[:]))
		if total > maxIDXElements {
			return nil, fmt.Errorf("%s: header declares dimensions %v… (over %d values), more than any supported dataset", name, dims[:i+1], uint64(maxIDXElements))
		}
	}
	// Read exactly total bytes; the buffer grows with the data actually present, so a
	// header that lies about the size cannot make us allocate for it.
	var buf bytes.Buffer
	if total <= 1<<26 {
		buf.Grow(int(total))
	}
	n, err := io.CopyN(&buf, src, int64(total))
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: truncated: %d of %d data bytes (dimensions %v)", name, n, total, dims)
		}
		return nil, fmt.Errorf("%s: reading data byte %d of %d: %w", name, n, total, describeReadErr(err, gz))
	}
	var one [1]byte
	m, err := io.ReadFull(src, one[:])
	switch {
	case m > 0:
		return nil, fmt.Errorf("%s: trailing data after the %d values declared by dimensions %v", name, total, dims)
	case errors.Is(err, io.EOF):
	default:
		return nil, fmt.Errorf("%s: after the data: %w", name, describeReadErr(err, gz))
	}
	return &IDX{Dims: dims, Data: buf.Bytes(), ContentSHA256: hex.EncodeToString(hash.Sum(nil))}, nil
}

func eofAsTruncated(err error) error {
	if errors.Is(err, io.EOF) {
		return errors.New("file is empty")
	}
	return err
}

// describeReadErr turns the io errors of a read into clearer ones.
func describeReadErr(err error, gz bool) error {
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF) && gz:
		return fmt.Errorf("gzip stream ends early (truncated file): %w", err)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return fmt.Errorf("unexpected end of file: %w", err)
	case errors.Is(err, gzip.ErrChecksum):
		return fmt.Errorf("corrupt gzip data (checksum mismatch): %w", err)
	case errors.Is(err, gzip.ErrHeader):
		return fmt.Errorf("corrupt gzip data (bad header of a following member): %w", err)
	case gz:
		return fmt.Errorf("corrupt gzip data: %w", err)
	}
	return err
}

// decodeIDXFile opens path and decodes it with DecodeIDX.
func decodeIDXFile(path string, ndims int) (*IDX, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	return DecodeIDX(f, path, ndims)
}

// ReadIDXImages reads an IDX images file (magic 0x00000803, dimensions n×h×w) and
// returns its values as float32 byte/255 with n, h, w. If wantH, wantW > 0 the image
// size must match.
func ReadIDXImages(path string, wantH, wantW int) (images []float32, n, h, w int, err error) {
	images, n, h, w, _, err = readIDXImages(path, wantH, wantW)
	return images, n, h, w, err
}

func readIDXImages(path string, wantH, wantW int) (images []float32, n, h, w int, content string, err error) {
	x, err := decodeIDXFile(path, 3)
	if err != nil {
		return nil, 0, 0, 0, "", err
	}
	n, h, w = x.Dims[0], x.Dims[1], x.Dims[2]
	if (wantH > 0 && h != wantH) || (wantW > 0 && w != wantW) {
		return nil, 0, 0, 0, "", fmt.Errorf("%s: images are %d×%d, want %d×%d", path, h, w, wantH, wantW)
	}
	return bytesToUnit(x.Data), n, h, w, x.ContentSHA256, nil
}

// ReadIDXLabels reads an IDX labels file (magic 0x00000801) and checks every label is
// in [0, classes).
func ReadIDXLabels(path string, classes int) ([]int, error) {
	labels, _, err := readIDXLabels(path, classes)
	return labels, err
}

func readIDXLabels(path string, classes int) ([]int, string, error) {
	x, err := decodeIDXFile(path, 1)
	if err != nil {
		return nil, "", err
	}
	labels := make([]int, len(x.Data))
	for i, b := range x.Data {
		if int(b) >= classes {
			return nil, "", fmt.Errorf("%s: label %d of item %d outside [0,%d)", path, b, i, classes)
		}
		labels[i] = int(b)
	}
	return labels, x.ContentSHA256, nil
}

// bytesToUnit maps bytes to float32 b/255.
func bytesToUnit(b []byte) []float32 {
	var lut [256]float32
	for i := range lut {
		lut[i] = float32(i) / 255
	}
	out := make([]float32, len(b))
	for i, v := range b {
		out[i] = lut[v]
	}
	return out
}

// loadIDXPair reads a 28×28 images file and its labels file, checks they agree, and
// returns the dataset with the content SHA-256s of both files.
func loadIDXPair(name, imagesPath, labelsPath string, classes int) (*Dataset, [2]string, error) {
	var sums [2]string
	imgs, n, h, w, sumImg, err := readIDXImages(imagesPath, 28, 28)
	if err != nil {
		return nil, sums, err
	}
	if n == 0 {
		return nil, sums, fmt.Errorf("%s: no images (first dimension is 0)", imagesPath)
	}
	labels, sumLab, err := readIDXLabels(labelsPath, classes)
	if err != nil {
		return nil, sums, err
	}
	if len(labels) != n {
		return nil, sums, fmt.Errorf("%s has %d images but %s has %d labels, want equal counts", imagesPath, n, labelsPath, len(labels))
	}
	d := &Dataset{Name: name, Source: imagesPath, N: n, C: 1, H: h, W: w, Classes: classes, Images: imgs, Labels: labels}
	d.SHA256 = d.Fingerprint()
	return d, [2]string{sumImg, sumLab}, nil
}
