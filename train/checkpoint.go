package train

import (
	"bytes"
	"crypto/sha256"
	"encoding/gob"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/dpfil/dpfil/accounting"
)

// checkpointMagic starts every checkpoint file; the format version is its last byte.
const checkpointMagic = "DPFILCK1"

// checkpoint is everything needed to continue a run bit-identically: the config, the
// finished repeats, and the current repeat's parameters, optimizer state (momentum
// buffer, or Adam's moments and update count), step, RNG
// states (sampler, FIL coordinates; the noise is counter-based: the step is its
// state), sampler state, accountants and metrics.
type checkpoint struct {
	Config      Config
	ConfigHash  string
	Repeat      int            // current repeat (== Config.Repeats when all are done)
	Done        []RepeatResult // finished repeats (with their dFIL and parameters)
	Cur         *repeatState   // nil between repeats
	Wall        float64        // training seconds spent in earlier segments
	Samples     int64          // batch samples processed in earlier segments
	StepSeconds float64        // seconds spent in DP-SGD steps in earlier segments
	Public      string         // fingerprint of the caller's public data (Options.Public; "" = none)
}

// repeatState is the checkpointed state of the repeat in progress.
type repeatState struct {
	Repeat    int
	InitSeed  uint64
	Step      int
	Params    []float64
	Velocity  []float64 // momentum SGD's velocity, or Adam's first moment m
	AdamV     []float64 // Adam's second moment v (nil under momentum SGD)
	AdamSteps int       // Adam's update count t (0 under momentum SGD)
	Sampler   samplerState
	CoordsRNG []byte
	Noise     string          // NoiseGenerator (counter-based: the step says where the noise stands)
	FIL       *accounting.FIL // nil when FIL is off
	Ledger    []byte          // JSON privacy ledger of the Step steps done
	Samples   int64           // Σ_t |B_t| so far
	LastLoss  float64
	History   []EvalPoint

	// η² (D = 1), label dFIL (D = K) and label η² (D = 1) accountants; nil when off.
	Eta, LabelFIL, LabelEta *accounting.FIL
	EtaRelChange            float64 // largest last-iteration relative change of η so far

	// Perturb is the learned gradient perturbation g_φ's state (nil when off).
	Perturb *perturbCheckpoint
}

// encodeCheckpoint serialises ck as magic, SHA-256 of the payload, gob payload.
func encodeCheckpoint(ck *checkpoint) ([]byte, error) {
	var payload bytes.Buffer
	if err := gob.NewEncoder(&payload).Encode(ck); err != nil {
		return nil, fmt.Errorf("encode checkpoint: %w", err)
	}
	sum := sha256.Sum256(payload.Bytes())
	out := make([]byte, 0, len(checkpointMagic)+len(sum)+payload.Len())
	out = append(out, checkpointMagic...)
	out = append(out, sum[:]...)
	return append(out, payload.Bytes()...), nil
}

// decodeCheckpoint verifies and decodes a checkpoint file's bytes.
func decodeCheckpoint(b []byte) (*checkpoint, error) {
	n := len(checkpointMagic)
	if len(b) < n+sha256.Size || string(b[:n]) != checkpointMagic {
		return nil, fmt.Errorf("not a dpfil checkpoint (bad magic or truncated)")
	}
	payload := b[n+sha256.Size:]
	if sum := sha256.Sum256(payload); !bytes.Equal(sum[:], b[n:n+sha256.Size]) {
		return nil, fmt.Errorf("checkpoint is corrupt (checksum mismatch)")
	}
	var ck checkpoint
	if err := gob.NewDecoder(bytes.NewReader(payload)).Decode(&ck); err != nil {
		return nil, fmt.Errorf("decode checkpoint: %w", err)
	}
	if ck.ConfigHash != ck.Config.Hash() {
		return nil, fmt.Errorf("checkpoint config hash %s does not match its config (%s)", ck.ConfigHash, ck.Config.Hash())
	}
	return &ck, nil
}

func saveCheckpoint(dir string, ck *checkpoint) error {
	b, err := encodeCheckpoint(ck)
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(dir, CheckpointFile), b)
}

// loadCheckpoint reads dir's checkpoint; it returns (nil, nil) when there is none.
func loadCheckpoint(dir string) (*checkpoint, error) {
	path := filepath.Join(dir, CheckpointFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read checkpoint: %w", err)
	}
	ck, err := decodeCheckpoint(b)
	if err != nil {
		return nil, fmt.Errorf("read checkpoint %s: %w", path, err)
	}
	return ck, nil
}

// LoadRunConfig returns the config of the run in dir, from its checkpoint or, for a
// finished run, its result.json (what `dpfil train --resume DIR` continues).
func LoadRunConfig(dir string) (Config, error) {
	ck, err := loadCheckpoint(dir)
	if err != nil {
		return Config{}, err
	}
	if ck != nil {
		return ck.Config, nil
	}
	r, err := ReadResult(dir)
	if err != nil {
		return Config{}, fmt.Errorf("no checkpoint or result in %s: %w", dir, err)
	}
	return r.Config, nil
}
