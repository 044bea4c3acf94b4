// Package transcript is the file format of the adversary's transcripts: what an
// informed adversary sees of a DP-SGD run (θ₀, every released noisy gradient sum
// exactly as applied, the batches or the known points' membership, and the
// hyperparameters), written by dpfil train (train.RunWithTranscript) and by the
// attack game, and read and replayed by package attack (format: docs/attacks.md).
//
// It sits below both train and attack and imports neither, so that the trainer can
// record and the attacks can read without an arrow running back up.
package transcript

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"math"
	"os"
	"path/filepath"
)

// File is the transcript of repeat 0 in a run directory; repeat r > 0 is FileName(r).
const File = "transcript.bin"

// FileName is the transcript file of repeat r: File for r = 0, transcript_r<r>.bin
// otherwise.
func FileName(r int) string {
	if r == 0 {
		return File
	}
	return fmt.Sprintf("transcript_r%d.bin", r)
}

// Exists reports whether dir already holds a transcript (a resumed run then keeps
// recording).
func Exists(dir string) (bool, error) {
	_, err := os.Stat(filepath.Join(dir, File))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("run directory: %w", err)
	}
	return true, nil
}

// Transcript file format (little endian), version 1:
//
//	magic "DPFT", u16 version, u16 reserved
//	records: u32 payload length n, u8 kind, n payload bytes, u32 CRC-32C of kind+payload
//	  kind 1 header: JSON Header (first record)
//	  kind 2 init:   P float32, θ₀ (second record)
//	  kind 3 step:   u32 t, u32 P, P float32 released gradient g_t, u32 m,
//	                 ⌈m/8⌉ bytes: bit j = known point j was in the batch (m = 0: all were),
//	                 optionally u32 b, b × u32 dataset indices of the batch (training runs)
//	  kind 4 index:  u32 count, count × u64 file offsets of the step records (at Close)
//	trailer: u64 offset of the index record, "DPFTEND\x00"
//
// Records are appended and flushed as training goes, so a file cut short by a crash
// is read up to its last complete record (Transcript.Complete is then false); a record
// whose checksum fails with more data after it is corruption and is rejected.
const (
	transcriptMagic   = "DPFT"
	transcriptTrailer = "DPFTEND\x00"
	transcriptVersion = 1

	recHeader = 1
	recInit   = 2
	recStep   = 3
	recIndex  = 4

	maxRecord = 1 << 30
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// Header is what the adversary is told besides the gradients: the
// hyperparameters and the known points, and how to replay θ_t. With Update "" (the
// attack game) θ_{t+1} = θ_t − LR/BatchDenominator · g_t; with Update "momentum"
// (dpfil train) the trainer's heavy-ball step with ḡ_t = g_t/BatchDenominator:
// u = ḡ_t + WeightDecay·θ_t, v ← Momentum·v + u, θ_{t+1} = θ_t − LR·v; with Update
// "adam" (dpfil train --optimizer adam) bias-corrected Adam on u with AdamBeta1,
// AdamBeta2, AdamEps, its update count t+1 at step t (see Replay).
type Header struct {
	Format           string  `json:"format"` // "dpfil-transcript"
	Model            string  `json:"model"`
	Dataset          string  `json:"dataset,omitempty"`
	DatasetSHA256    string  `json:"dataset_sha256,omitempty"`
	NumParams        int     `json:"num_params"`
	Known            []int   `json:"known"` // dataset indices of D₋ (membership bits refer to this order)
	Steps            int     `json:"steps"` // planned T
	Q                float64 `json:"q"`
	Sigma            float64 `json:"sigma"`
	Clip             float64 `json:"clip"`
	ClipMode         string  `json:"clip_mode"` // "hard"
	LR               float64 `json:"lr"`
	BatchDenominator float64 `json:"batch_denominator"`
	Seed             uint64  `json:"seed"`
	Trial            int     `json:"trial,omitempty"`
	// Prior is the attack game's prior (dataset indices); empty for training runs.
	Prior []int `json:"prior,omitempty"`

	// Fields of transcripts recorded by dpfil train (absent for the attack game).
	Update      string  `json:"update,omitempty"` // "" (plain SGD) | "momentum" | "adam"
	Momentum    float64 `json:"momentum,omitempty"`
	AdamBeta1   float64 `json:"adam_beta1,omitempty"`
	AdamBeta2   float64 `json:"adam_beta2,omitempty"`
	AdamEps     float64 `json:"adam_eps,omitempty"`
	WeightDecay float64 `json:"weight_decay,omitempty"`
	Sampling    string  `json:"sampling,omitempty"` // shuffle | poisson
	NTrain      int     `json:"n_train,omitempty"`  // training-set size N (batch indices refer to it)
	Repeat      int     `json:"repeat,omitempty"`
	ConfigHash  string  `json:"config_hash,omitempty"`
}

// Update rules of Header.Update.
const (
	UpdateSGD      = ""         // θ ← θ − LR/BatchDenominator · g
	UpdateMomentum = "momentum" // dpfil train's momentum SGD with weight decay
	UpdateAdam     = "adam"     // dpfil train's bias-corrected Adam with weight decay
)

// Step is one step as released: the privatised gradient and which known
// points were in the batch (nil: all of them), and for training transcripts the
// batch's dataset indices (nil when not recorded).
type Step struct {
	T           int
	Released    []float32
	KnownMember []bool
	Batch       []int
}

// Transcript is a loaded transcript.
type Transcript struct {
	Header Header
	Theta0 []float32
	Steps  []Step
	// Complete is true when the file was closed properly (index and trailer valid);
	// false when it was recovered up to its last good record.
	Complete bool
}

// Writer appends a transcript to a file.
type Writer struct {
	f       *os.File
	off     int64
	offsets []uint64
	p       int
	known   int
	next    int
	buf     bytes.Buffer
}

// Create creates path and writes the header and θ₀.
func Create(path string, h Header, theta0 []float32) (*Writer, error) {
	h.Format = "dpfil-transcript"
	if h.ClipMode == "" {
		h.ClipMode = "hard"
	}
	if h.NumParams != len(theta0) || h.NumParams == 0 {
		return nil, fmt.Errorf("transcript: header says %d parameters, θ₀ has %d", h.NumParams, len(theta0))
	}
	js, err := json.Marshal(h)
	if err != nil {
		return nil, fmt.Errorf("transcript: encode header: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("transcript: %w", err)
	}
	w := &Writer{f: f, p: h.NumParams, known: len(h.Known)}
	var magic [8]byte
	copy(magic[:], transcriptMagic)
	binary.LittleEndian.PutUint16(magic[4:], transcriptVersion)
	if _, err := f.Write(magic[:]); err != nil {
		f.Close()
		return nil, fmt.Errorf("transcript: write magic: %w", err)
	}
	w.off = 8
	if _, err := w.record(recHeader, js); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := w.record(recInit, f32bytes(nil, theta0)); err != nil {
		f.Close()
		return nil, err
	}
	return w, nil
}

func f32bytes(dst []byte, v []float32) []byte {
	for _, x := range v {
		dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(x))
	}
	return dst
}

// record appends one record and returns its offset.
func (w *Writer) record(kind byte, payload []byte) (int64, error) {
	w.buf.Reset()
	var hdr [5]byte
	binary.LittleEndian.PutUint32(hdr[:], uint32(len(payload)))
	hdr[4] = kind
	w.buf.Write(hdr[:])
	w.buf.Write(payload)
	crc := crc32.Update(crc32.Checksum([]byte{kind}, crcTable), crcTable, payload)
	var c [4]byte
	binary.LittleEndian.PutUint32(c[:], crc)
	w.buf.Write(c[:])
	off := w.off
	n, err := w.f.Write(w.buf.Bytes())
	w.off += int64(n)
	if err != nil {
		return 0, fmt.Errorf("transcript: write record: %w", err)
	}
	return off, nil
}

// WriteStep appends step t (steps must come in order 0, 1, …): the released
// privatised gradient and the batch membership of the known points (nil = all).
func (w *Writer) WriteStep(t int, released []float64, knownMember []bool) error {
	if len(released) != w.p {
		return fmt.Errorf("transcript: step %d has %d values, want %d", t, len(released), w.p)
	}
	for i, x := range released {
		if math.IsNaN(x) || math.IsInf(x, 0) || math.Abs(x) > math.MaxFloat32 {
			return fmt.Errorf("transcript: step %d value %d is %v, not a finite float32", t, i, x)
		}
	}
	r32 := make([]float32, len(released))
	for i, x := range released {
		r32[i] = float32(x)
	}
	return w.writeStep(t, r32, knownMember, nil)
}

// WriteTrainStep appends step t of a training run: the released gradient exactly as
// the trainer applied it (float32) and the dataset indices of the batch (possibly
// empty). Known-point membership is not written (training headers list no known
// points: the batch indices say who was in).
func (w *Writer) WriteTrainStep(t int, released []float32, batch []int) error {
	if len(released) != w.p {
		return fmt.Errorf("transcript: step %d has %d values, want %d", t, len(released), w.p)
	}
	for i, x := range released {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return fmt.Errorf("transcript: step %d value %d is %v, not finite", t, i, x)
		}
	}
	for _, i := range batch {
		if i < 0 || int64(i) > math.MaxUint32 {
			return fmt.Errorf("transcript: step %d batch index %d out of range", t, i)
		}
	}
	if batch == nil {
		batch = []int{}
	}
	return w.writeStep(t, released, nil, batch)
}

// writeStep encodes and appends a step record; batch == nil omits the batch field.
func (w *Writer) writeStep(t int, released []float32, knownMember []bool, batch []int) error {
	if t != w.next {
		return fmt.Errorf("transcript: step %d written after step %d", t, w.next-1)
	}
	if knownMember != nil && len(knownMember) != w.known {
		return fmt.Errorf("transcript: step %d membership has %d entries, want %d", t, len(knownMember), w.known)
	}
	b := make([]byte, 0, 12+4*w.p+(len(knownMember)+7)/8+4+4*len(batch))
	b = binary.LittleEndian.AppendUint32(b, uint32(t))
	b = binary.LittleEndian.AppendUint32(b, uint32(w.p))
	b = f32bytes(b, released)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(knownMember)))
	bits := make([]byte, (len(knownMember)+7)/8)
	for j, in := range knownMember {
		if in {
			bits[j/8] |= 1 << (j % 8)
		}
	}
	b = append(b, bits...)
	if batch != nil {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(batch)))
		for _, i := range batch {
			b = binary.LittleEndian.AppendUint32(b, uint32(i))
		}
	}
	off, err := w.record(recStep, b)
	if err != nil {
		return err
	}
	w.offsets = append(w.offsets, uint64(off))
	w.next++
	return nil
}

// Steps is the number of steps written so far.
func (w *Writer) Steps() int { return w.next }

// Resume reopens the transcript at path to continue writing at step
// `steps` (a run resumed from a checkpoint taken after that many steps): it checks
// that the file's header equals h (as Create would write it), keeps θ₀ and
// the first `steps` step records, cuts off everything after them (steps recorded
// after the checkpoint, the index and trailer of a closed file, a torn record) and
// appends from there. The file must hold at least `steps` intact step records.
func Resume(path string, h Header, steps int) (*Writer, error) {
	h.Format = "dpfil-transcript"
	if h.ClipMode == "" {
		h.ClipMode = "hard"
	}
	if steps < 0 {
		return nil, fmt.Errorf("transcript: resume at step %d", steps)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("transcript: resume: %w", err)
	}
	if len(data) < 8 || string(data[:4]) != transcriptMagic || binary.LittleEndian.Uint16(data[4:]) != transcriptVersion {
		return nil, fmt.Errorf("transcript %s: resume: not a version-%d dpfil transcript", path, transcriptVersion)
	}
	tr := &Transcript{}
	off := int64(8)
	var offsets []uint64
	for i := 0; i < 2+steps; i++ {
		want := byte(recStep)
		if i < 2 {
			want = []byte{recHeader, recInit}[i]
		}
		kind, payload, next, err := readRecord(data, off)
		if errors.Is(err, errTorn) {
			return nil, fmt.Errorf("transcript %s: resume at step %d: the file holds only %d step records", path, steps, max(0, i-2))
		}
		if err != nil {
			return nil, fmt.Errorf("transcript %s: resume: %w", path, err)
		}
		if kind != want {
			return nil, fmt.Errorf("transcript %s: resume at step %d: record at offset %d is a %s record, want %s", path, steps, off, recName(kind), recName(want))
		}
		if err := tr.apply(kind, payload); err != nil {
			return nil, fmt.Errorf("transcript %s: resume: record at offset %d: %w", path, off, err)
		}
		if kind == recStep {
			offsets = append(offsets, uint64(off))
		}
		off = next
	}
	got, err := json.Marshal(tr.Header)
	if err != nil {
		return nil, fmt.Errorf("transcript: resume: %w", err)
	}
	want, err := json.Marshal(h)
	if err != nil {
		return nil, fmt.Errorf("transcript: resume: %w", err)
	}
	if !bytes.Equal(got, want) {
		return nil, fmt.Errorf("transcript %s was recorded for a different run: header %s, want %s", path, got, want)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("transcript: resume: %w", err)
	}
	if err := f.Truncate(off); err != nil {
		f.Close()
		return nil, fmt.Errorf("transcript: resume: truncate: %w", err)
	}
	if _, err := f.Seek(off, 0); err != nil {
		f.Close()
		return nil, fmt.Errorf("transcript: resume: %w", err)
	}
	return &Writer{f: f, off: off, offsets: offsets, p: h.NumParams, known: len(h.Known), next: steps}, nil
}

// Close writes the index and the trailer and closes the file.
func (w *Writer) Close() error {
	b := binary.LittleEndian.AppendUint32(nil, uint32(len(w.offsets)))
	for _, o := range w.offsets {
		b = binary.LittleEndian.AppendUint64(b, o)
	}
	off, err := w.record(recIndex, b)
	if err != nil {
		w.f.Close()
		return err
	}
	tr := binary.LittleEndian.AppendUint64(nil, uint64(off))
	tr = append(tr, transcriptTrailer...)
	if _, err := w.f.Write(tr); err != nil {
		w.f.Close()
		return fmt.Errorf("transcript: write trailer: %w", err)
	}
	if err := w.f.Sync(); err != nil {
		w.f.Close()
		return fmt.Errorf("transcript: sync: %w", err)
	}
	if err := w.f.Close(); err != nil {
		return fmt.Errorf("transcript: close: %w", err)
	}
	return nil
}

// errTorn marks a record cut short by the end of the data.
var errTorn = errors.New("record cut short")

// readRecord parses the record at off. It returns errTorn when the data ends inside
// the record.
func readRecord(data []byte, off int64) (kind byte, payload []byte, next int64, err error) {
	if off+5 > int64(len(data)) {
		return 0, nil, 0, errTorn
	}
	n := int64(binary.LittleEndian.Uint32(data[off:]))
	if n > maxRecord {
		return 0, nil, 0, fmt.Errorf("record at offset %d claims %d bytes", off, n)
	}
	kind = data[off+4]
	end := off + 5 + n + 4
	if end > int64(len(data)) {
		return 0, nil, 0, errTorn
	}
	payload = data[off+5 : off+5+n]
	want := binary.LittleEndian.Uint32(data[off+5+n:])
	got := crc32.Update(crc32.Checksum([]byte{kind}, crcTable), crcTable, payload)
	if got != want {
		return kind, nil, end, fmt.Errorf("record at offset %d (kind %d): checksum %08x, want %08x", off, kind, got, want)
	}
	return kind, payload, end, nil
}

// Open reads and verifies a transcript. A properly closed file is read
// through its index; otherwise records are read in order up to the last good one
// (a crash leaves a torn final record, which is dropped). Any other damage is an
// error naming the offending record.
func Open(path string) (*Transcript, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("transcript: %w", err)
	}
	tr, err := parseTranscript(data)
	if err != nil {
		return nil, fmt.Errorf("transcript %s: %w", path, err)
	}
	return tr, nil
}

func parseTranscript(data []byte) (*Transcript, error) {
	if len(data) < 8 || string(data[:4]) != transcriptMagic {
		return nil, fmt.Errorf("not a dpfil transcript (bad magic)")
	}
	if v := binary.LittleEndian.Uint16(data[4:]); v != transcriptVersion {
		return nil, fmt.Errorf("unsupported transcript version %d", v)
	}
	tr := &Transcript{}
	off := int64(8)
	// header and θ₀
	for _, want := range []byte{recHeader, recInit} {
		kind, payload, next, err := readRecord(data, off)
		if errors.Is(err, errTorn) {
			return nil, fmt.Errorf("file ends before its %s record", recName(want))
		}
		if err != nil {
			return nil, err
		}
		if kind != want {
			return nil, fmt.Errorf("record at offset %d is a %s record, want %s", off, recName(kind), recName(want))
		}
		if err := tr.apply(kind, payload); err != nil {
			return nil, fmt.Errorf("record at offset %d: %w", off, err)
		}
		off = next
	}
	stepsStart := off
	// a complete file: trailer → index → steps
	if idx, ok := trailerIndex(data); ok {
		kind, payload, _, err := readRecord(data, idx)
		if err != nil || kind != recIndex {
			return nil, fmt.Errorf("index record at offset %d is damaged (%v)", idx, err)
		}
		if len(payload) < 4 {
			return nil, fmt.Errorf("index record too short")
		}
		cnt := int(binary.LittleEndian.Uint32(payload))
		if len(payload) != 4+8*cnt {
			return nil, fmt.Errorf("index record holds %d bytes for %d entries", len(payload), cnt)
		}
		for i := 0; i < cnt; i++ {
			so := int64(binary.LittleEndian.Uint64(payload[4+8*i:]))
			if so < stepsStart || so >= idx {
				return nil, fmt.Errorf("index entry %d points to offset %d outside the step records", i, so)
			}
			kind, p, _, err := readRecord(data, so)
			if err != nil {
				return nil, fmt.Errorf("step %d: %w", i, err)
			}
			if kind != recStep {
				return nil, fmt.Errorf("index entry %d points to a %s record", i, recName(kind))
			}
			if err := tr.apply(kind, p); err != nil {
				return nil, fmt.Errorf("step record at offset %d: %w", so, err)
			}
		}
		tr.Complete = true
		return tr, nil
	}
	// an unfinished file: scan
	for off < int64(len(data)) {
		kind, payload, next, err := readRecord(data, off)
		if errors.Is(err, errTorn) {
			break // torn tail
		}
		if err != nil {
			if next == int64(len(data)) {
				break // the last record was being written when the writer died
			}
			return nil, err
		}
		if kind == recIndex {
			return nil, fmt.Errorf("index record at offset %d but no valid trailer: the file is damaged", off)
		}
		if kind != recStep {
			return nil, fmt.Errorf("unexpected %s record at offset %d", recName(kind), off)
		}
		if err := tr.apply(kind, payload); err != nil {
			return nil, fmt.Errorf("step record at offset %d: %w", off, err)
		}
		off = next
	}
	return tr, nil
}

func trailerIndex(data []byte) (int64, bool) {
	if len(data) < 16 || string(data[len(data)-8:]) != transcriptTrailer {
		return 0, false
	}
	return int64(binary.LittleEndian.Uint64(data[len(data)-16:])), true
}

func recName(k byte) string {
	switch k {
	case recHeader:
		return "header"
	case recInit:
		return "init"
	case recStep:
		return "step"
	case recIndex:
		return "index"
	}
	return fmt.Sprintf("unknown(%d)", k)
}

func (tr *Transcript) apply(kind byte, p []byte) error {
	switch kind {
	case recHeader:
		if err := json.Unmarshal(p, &tr.Header); err != nil {
			return fmt.Errorf("header: %w", err)
		}
		h := tr.Header
		if h.Format != "dpfil-transcript" || h.NumParams <= 0 || h.Steps < 0 || !(h.Q > 0 && h.Q <= 1) || !(h.Clip > 0) || !(h.BatchDenominator > 0) {
			return fmt.Errorf("header: implausible hyperparameters %+v", h)
		}
		if h.Update != UpdateSGD && h.Update != UpdateMomentum && h.Update != UpdateAdam || !(h.Momentum >= 0 && h.Momentum < 1) || !(h.WeightDecay >= 0) || math.IsInf(h.WeightDecay, 0) || !(h.LR > 0) || math.IsInf(h.LR, 0) {
			return fmt.Errorf("header: unknown update %q or implausible lr %v, momentum %v, weight decay %v", h.Update, h.LR, h.Momentum, h.WeightDecay)
		}
		if h.Update == UpdateAdam && (!(h.AdamBeta1 >= 0 && h.AdamBeta1 < 1) || !(h.AdamBeta2 >= 0 && h.AdamBeta2 < 1) || !(h.AdamEps > 0) || math.IsInf(h.AdamEps, 0)) {
			return fmt.Errorf("header: implausible Adam parameters β1 %v, β2 %v, ε %v", h.AdamBeta1, h.AdamBeta2, h.AdamEps)
		}
	case recInit:
		if len(p) != 4*tr.Header.NumParams {
			return fmt.Errorf("θ₀ has %d bytes, want %d", len(p), 4*tr.Header.NumParams)
		}
		tr.Theta0 = make([]float32, tr.Header.NumParams)
		for i := range tr.Theta0 {
			tr.Theta0[i] = math.Float32frombits(binary.LittleEndian.Uint32(p[4*i:]))
		}
	case recStep:
		P := tr.Header.NumParams
		if len(p) < 12+4*P {
			return fmt.Errorf("step record too short")
		}
		t := int(binary.LittleEndian.Uint32(p))
		if t != len(tr.Steps) {
			return fmt.Errorf("step %d where step %d was expected", t, len(tr.Steps))
		}
		if int(binary.LittleEndian.Uint32(p[4:])) != P {
			return fmt.Errorf("step %d has a different parameter count", t)
		}
		s := Step{T: t, Released: make([]float32, P)}
		for i := range s.Released {
			s.Released[i] = math.Float32frombits(binary.LittleEndian.Uint32(p[8+4*i:]))
		}
		rest := p[8+4*P:]
		m := int(binary.LittleEndian.Uint32(rest))
		if m != 0 && m != len(tr.Header.Known) {
			return fmt.Errorf("step %d membership has %d entries, want %d", t, m, len(tr.Header.Known))
		}
		if len(rest) < 4+(m+7)/8 {
			return fmt.Errorf("step %d membership has %d bytes, want %d", t, len(rest)-4, (m+7)/8)
		}
		if tail := rest[4+(m+7)/8:]; len(tail) > 0 {
			if len(tail) < 4 {
				return fmt.Errorf("step %d has %d stray bytes after its membership", t, len(tail))
			}
			nb := int(binary.LittleEndian.Uint32(tail))
			if len(tail) != 4+4*nb {
				return fmt.Errorf("step %d batch has %d bytes for %d indices", t, len(tail)-4, nb)
			}
			s.Batch = make([]int, nb)
			for j := range s.Batch {
				s.Batch[j] = int(binary.LittleEndian.Uint32(tail[4+4*j:]))
				if n := tr.Header.NTrain; n > 0 && s.Batch[j] >= n {
					return fmt.Errorf("step %d batch index %d ≥ N = %d", t, s.Batch[j], n)
				}
			}
		}
		if m > 0 {
			s.KnownMember = make([]bool, m)
			for j := range s.KnownMember {
				s.KnownMember[j] = rest[4+j/8]&(1<<(j%8)) != 0
			}
		}
		for _, v := range s.Released {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return fmt.Errorf("step %d holds a non-finite gradient value", t)
			}
		}
		tr.Steps = append(tr.Steps, s)
	default:
		return fmt.Errorf("unknown record kind %d", kind)
	}
	return nil
}

// Replayer rebuilds θ_t from θ₀ and the released gradients with the header's update.
type Replayer struct {
	h          Header
	theta, vel []float64
	sq         []float64 // Adam's second moment (vel is its first)
	t          int       // updates applied
}

// NewReplayer returns a replayer at θ₀.
func (tr *Transcript) NewReplayer() *Replayer {
	r := &Replayer{h: tr.Header, theta: make([]float64, len(tr.Theta0))}
	for i, v := range tr.Theta0 {
		r.theta[i] = float64(v)
	}
	switch r.h.Update {
	case UpdateMomentum:
		r.vel = make([]float64, len(r.theta))
	case UpdateAdam:
		r.vel, r.sq = make([]float64, len(r.theta)), make([]float64, len(r.theta))
	}
	return r
}

// Step applies one update. The momentum and Adam rules are written operation for
// operation like dpfil train's optimisers (train/optim.go; explicit conversions
// forbid fused multiply-adds), so the replay is bit-identical to the trainer's
// float64 master parameters.
func (r *Replayer) Step(released []float32) {
	h := r.h
	r.t++
	if h.Update == UpdateAdam {
		r.adamStep(released)
		return
	}
	if h.Update == UpdateSGD {
		step := h.LR / h.BatchDenominator
		for i, v := range released {
			r.theta[i] -= step * float64(v)
		}
		return
	}
	m, lr, wd, b := h.Momentum, h.LR, h.WeightDecay, h.BatchDenominator
	for i, w := range r.theta {
		g := float64(released[i])/b + float64(wd*w)
		r.vel[i] = float64(m*r.vel[i]) + g
		r.theta[i] = w - float64(lr*r.vel[i])
	}
}

// adamStep is Step under Update "adam": u = ḡ + λθ, m ← β1·m + (1−β1)·u,
// v ← β2·v + (1−β2)·u², θ ← θ − (ρ/(1−β1^t))·m/(√v/√(1−β2^t) + ε).
func (r *Replayer) adamStep(released []float32) {
	h := r.h
	b1, b2, eps, wd, b := h.AdamBeta1, h.AdamBeta2, h.AdamEps, h.WeightDecay, h.BatchDenominator
	c1, c2 := 1-b1, 1-b2
	stepSize := h.LR / (1 - math.Pow(b1, float64(r.t)))
	bc2Sqrt := math.Sqrt(1 - math.Pow(b2, float64(r.t)))
	for i, w := range r.theta {
		g := float64(released[i])/b + float64(wd*w)
		r.vel[i] = float64(b1*r.vel[i]) + float64(c1*g)
		r.sq[i] = float64(b2*r.sq[i]) + float64(float64(c2*g)*g)
		denom := math.Sqrt(r.sq[i])/bc2Sqrt + eps
		r.theta[i] = w - float64(stepSize*(r.vel[i]/denom))
	}
}

// Theta is θ_t before the next Step (the replayer's own slice: copy it to keep it).
func (r *Replayer) Theta() []float64 { return r.theta }

// Replay rebuilds the parameters from θ₀ and the released gradients: it calls each
// (when non-nil) with θ_t before step t's update and returns θ_n after the last
// recorded step, in float64 (dpfil train's master parameters; its params.npy holds
// their float32 rounding).
func (tr *Transcript) Replay(each func(t int, theta []float64) error) ([]float64, error) {
	rp := tr.NewReplayer()
	for _, s := range tr.Steps {
		if len(s.Released) != len(rp.theta) {
			return nil, fmt.Errorf("replay: step %d has %d values, want %d", s.T, len(s.Released), len(rp.theta))
		}
		if each != nil {
			if err := each(s.T, rp.theta); err != nil {
				return nil, fmt.Errorf("replay step %d: %w", s.T, err)
			}
		}
		rp.Step(s.Released)
	}
	return rp.theta, nil
}
