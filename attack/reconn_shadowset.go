package attack

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"time"

	"github.com/dpfil/dpfil/internal/dirlock"
	"github.com/dpfil/dpfil/models"
	"github.com/dpfil/dpfil/train"
)

// Shadow trainers of RecoNNOptions.Trainer.
const (
	// ShadowTrainerAuto is "batched" when the recipe allows it (never with a public
	// pool or optimizer adam), else "engine".
	ShadowTrainerAuto = "auto"
	// ShadowTrainerBatched trains blocks of shadows together (reconn_shadow.go): full
	// batch, the linear and mlp models, momentum SGD, no tuning features, σ given.
	ShadowTrainerBatched = "batched"
	// ShadowTrainerEngine runs train.Run once per shadow (any recipe).
	ShadowTrainerEngine = "engine"
)

// shadowSet is the trained shadow models: features (m×F: the released parameters,
// rounded to float32 as a released model is, and the one-hot label), the pool index
// of each one's target.
type shadowSet struct {
	xs      []float64
	pool    []int
	trainer string
	// loaded shadows came from the checkpoint; trained ones were trained in this run,
	// in seconds (wall) at the load averages loadStart and loadEnd (1-minute, NaN
	// where /proc/loadavg is not readable).
	loaded, trained     int
	seconds             float64
	loadStart, loadEnd  float64
	blockSize, parallel int
}

// shadowFile is the checkpoint of a shadow set: a header line naming its format and
// the key of everything the shadows depend on (the recipe, D₋, the pool, the seed,
// the trainer, the shared initialisation; not their number, so a set can be
// extended), then one record per shadow: its pool index (uint32) and its F features
// (float32), little-endian. Records are appended and synced block by block; a
// partly written last record is dropped on resume.
type shadowFile struct {
	f      *os.File
	header int64
	f32    int // features per record
}

const shadowFileMagic = "dpfil-reconn-shadows-v1"

// shadowAlgoVersion is part of the checkpoint key: raise it whenever a change makes
// the trainers give other shadows for the same options, so that no checkpoint mixes
// them.
const shadowAlgoVersion = 1

func (s *shadowFile) recordSize() int64 { return 4 + 4*int64(s.f32) }

// openShadowFile opens (or creates) path for the key and returns the file and the
// shadows already in it (their features appended to xs, pool indices to pool).
func openShadowFile(path, key string, F, poolN int) (*shadowFile, []float64, []int, error) {
	header := []byte(shadowFileMagic + " " + key + "\n")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("reconn checkpoint: %w", err)
	}
	// Before anything is read or truncated: a second run appending to the same file
	// would interleave its records with this one's.
	if err := dirlock.LockOpenFile(f); err != nil {
		f.Close()
		if errors.Is(err, dirlock.ErrLocked) {
			return nil, nil, nil, fmt.Errorf("reconn checkpoint %s is in use by another dpfil run (one run per checkpoint file): %w", path, err)
		}
		return nil, nil, nil, fmt.Errorf("reconn checkpoint: %w", err)
	}
	sf := &shadowFile{f: f, header: int64(len(header)), f32: F}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, nil, fmt.Errorf("reconn checkpoint: %w", err)
	}
	if st.Size() == 0 {
		if _, err := f.Write(header); err != nil {
			f.Close()
			return nil, nil, nil, fmt.Errorf("reconn checkpoint %s: %w", path, err)
		}
		return sf, nil, nil, nil
	}
	got := make([]byte, len(header))
	if _, err := io.ReadFull(f, got); err != nil || !bytes.Equal(got, header) {
		f.Close()
		line, _, _ := bufio.NewReader(io.MultiReader(bytes.NewReader(got), f)).ReadLine()
		return nil, nil, nil, fmt.Errorf("reconn checkpoint %s was written for another experiment (header %.80q, want %.80q): use another path or delete it", path, line, header[:len(header)-1])
	}
	n := (st.Size() - sf.header) / sf.recordSize()
	if err := f.Truncate(sf.header + n*sf.recordSize()); err != nil { // drop a torn record
		f.Close()
		return nil, nil, nil, fmt.Errorf("reconn checkpoint %s: %w", path, err)
	}
	xs := make([]float64, 0, int(n)*F)
	pool := make([]int, 0, n)
	r := bufio.NewReaderSize(f, 1<<20)
	rec := make([]byte, sf.recordSize())
	for i := int64(0); i < n; i++ {
		if _, err := io.ReadFull(r, rec); err != nil {
			f.Close()
			return nil, nil, nil, fmt.Errorf("reconn checkpoint %s: record %d: %w", path, i+1, err)
		}
		p := int(binary.LittleEndian.Uint32(rec))
		if p >= poolN {
			f.Close()
			return nil, nil, nil, fmt.Errorf("reconn checkpoint %s: record %d names pool sample %d of %d", path, i+1, p, poolN)
		}
		pool = append(pool, p)
		for j := 0; j < F; j++ {
			xs = append(xs, float64(math.Float32frombits(binary.LittleEndian.Uint32(rec[4+4*j:]))))
		}
	}
	if _, err := f.Seek(sf.header+n*sf.recordSize(), io.SeekStart); err != nil {
		f.Close()
		return nil, nil, nil, fmt.Errorf("reconn checkpoint %s: %w", path, err)
	}
	return sf, xs, pool, nil
}

// append writes the records of the shadows with features xs (k×F) and pool indices
// and syncs them to disk.
func (s *shadowFile) append(xs []float64, pool []int) error {
	buf := make([]byte, 0, int64(len(pool))*s.recordSize())
	for k, p := range pool {
		buf = binary.LittleEndian.AppendUint32(buf, uint32(p))
		for _, v := range xs[k*s.f32 : (k+1)*s.f32] {
			buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(float32(v)))
		}
	}
	if _, err := s.f.Write(buf); err != nil {
		return fmt.Errorf("reconn checkpoint: %w", err)
	}
	if err := s.f.Sync(); err != nil {
		return fmt.Errorf("reconn checkpoint: %w", err)
	}
	return nil
}

func (s *shadowFile) close() error {
	if s == nil {
		return nil
	}
	return s.f.Close()
}

// shadowKey is the checkpoint key of an experiment's shadows.
func shadowKey(o *RecoNNOptions, trainer string) (string, error) {
	cfg := o.Config
	cfg.FILCoords, cfg.FILExact, cfg.Accountant, cfg.EvalEvery = 0, false, "", 0 // not used by the shadows
	var public string
	var publicN int
	if o.Public != nil {
		public, publicN = o.Public.Fingerprint(), o.Public.N
	}
	b, err := json.Marshal(struct {
		Config                  train.Config
		Fixed, Pool             string
		FixedN, PoolN           int
		SameInit                bool
		Seed                    uint64
		Trainer                 string
		FeatureRounding, Labels string
		Version                 int
		Public                  string `json:",omitempty"` // the fixed public pool (keys without one are unchanged)
		PublicN                 int    `json:",omitempty"`
	}{cfg, o.Fixed.Fingerprint(), o.Pool.Fingerprint(), o.Fixed.N, o.Pool.N, o.SameInit, o.Seed, trainer, "float32", "one-hot", shadowAlgoVersion, public, publicN})
	if err != nil {
		return "", err
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:16]), nil
}

// loadAverage1 is the 1-minute load average (NaN where /proc/loadavg is not readable).
func loadAverage1() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return math.NaN()
	}
	var l float64
	if _, err := fmt.Sscan(string(b), &l); err != nil {
		return math.NaN()
	}
	return l
}

// resolveTrainer returns the trainer the options ask for and, for the batched one,
// its recipe.
func resolveTrainer(o *RecoNNOptions, arch models.Arch) (string, *shadowRecipe, error) {
	if o.Public != nil {
		switch o.Trainer {
		case "", ShadowTrainerAuto, ShadowTrainerEngine:
			return ShadowTrainerEngine, nil, nil
		case ShadowTrainerBatched:
			return "", nil, errors.New("reconn: --shadow-trainer batched does not train with a public pool (--public: pretraining, g_φ and learned noise run in train.Run's tuning): use --shadow-trainer engine or auto")
		}
	}
	r, err := newShadowRecipe(o.Config, arch, o.Fixed.N+1)
	switch o.Trainer {
	case "", ShadowTrainerAuto:
		if err != nil {
			return ShadowTrainerEngine, nil, nil
		}
		return ShadowTrainerBatched, r, nil
	case ShadowTrainerBatched:
		if err != nil {
			return "", nil, fmt.Errorf("reconn: --shadow-trainer batched: %w (use engine)", err)
		}
		return ShadowTrainerBatched, r, nil
	case ShadowTrainerEngine:
		return ShadowTrainerEngine, nil, nil
	}
	return "", nil, fmt.Errorf("reconn: shadow trainer %q, want auto, batched or engine", o.Trainer)
}

// trainShadowSet trains (or loads from the checkpoint and extends) the m shadow
// models. The engine trainer draws its pool permutation and per-shadow seeds from rng
// (as RunRecoNN always has); the batched one from its own stream of o.Seed, one
// seed per shadow, so that shadow k is the same model whatever the block size, the
// parallelism or where a run was resumed. runOne trains one model with train.Run.
func trainShadowSet(ctx context.Context, o *RecoNNOptions, arch models.Arch, rng *rand.Rand, initSeed uint64, F int,
	runOne func(img []float32, label int, seed uint64) ([]float32, error), logf func(string, ...any)) (*shadowSet, error) {
	trainer, recipe, err := resolveTrainer(o, arch)
	if err != nil {
		return nil, err
	}
	m, classes := o.Shadows, o.Fixed.Classes
	P := F - classes
	set := &shadowSet{trainer: trainer, loadStart: loadAverage1()}
	var file *shadowFile
	if o.Checkpoint != "" {
		key, err := shadowKey(o, trainer)
		if err != nil {
			return nil, err
		}
		var xs []float64
		var pool []int
		if file, xs, pool, err = openShadowFile(o.Checkpoint, key, F, o.Pool.N); err != nil {
			return nil, err
		}
		defer file.close()
		set.loaded = min(len(pool), m)
		set.xs, set.pool = xs[:set.loaded*F], pool[:set.loaded]
		if set.loaded > 0 {
			logf("reconn: %d shadow models loaded from %s", set.loaded, o.Checkpoint)
		}
	}
	xs := make([]float64, m*F)
	copy(xs, set.xs)
	set.xs = xs
	set.pool = append(make([]int, 0, m), set.pool...)
	feat := func(k int, params []float64, label int) {
		dst := xs[k*F : (k+1)*F]
		for i, v := range params[:P] {
			dst[i] = float64(float32(v))
		}
		clear(dst[P:])
		dst[P+label] = 1
	}
	progress := func(n int) {
		if o.Progress != nil {
			o.Progress("shadow", n)
		}
	}
	progress(set.loaded)
	t0 := time.Now()
	report := func(done int) {
		el := time.Since(t0).Seconds()
		rate := float64(done-set.loaded) / el
		logf("reconn: %d/%d shadow models (%.3g shadows/s this run, ETA %s, load %.2f)", done, m, rate,
			(time.Duration(float64(m-done)/rate) * time.Second).Round(time.Second), loadAverage1())
	}
	if trainer == ShadowTrainerEngine {
		perm := rng.Perm(o.Pool.N)
		params := make([]float64, P)
		for k := 0; k < m; k++ {
			seed := rng.Uint64()
			if k < set.loaded {
				continue
			}
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			i := perm[k%len(perm)]
			p32, err := runOne(o.Pool.Image(i), o.Pool.Labels[i], seed)
			if err != nil {
				return nil, fmt.Errorf("reconn shadow %d: %w", k+1, err)
			}
			for j, v := range p32 {
				params[j] = float64(v)
			}
			feat(k, params, o.Pool.Labels[i])
			set.pool = append(set.pool, i)
			if file != nil {
				if err := file.append(xs[k*F:(k+1)*F], set.pool[k:k+1]); err != nil {
					return nil, err
				}
			}
			progress(1)
		}
	} else {
		if err := trainBatchedSet(ctx, o, arch, recipe, initSeed, F, set, file, feat, progress, report); err != nil {
			return nil, err
		}
	}
	set.trained = m - set.loaded
	set.seconds = time.Since(t0).Seconds()
	set.loadEnd = loadAverage1()
	if set.trained > 0 {
		report(m)
	}
	return set, nil
}

// trainBatchedSet trains the shadows set does not hold yet with the batched trainer:
// blocks of o.ShadowBlock models, set.parallel blocks at a time (one per core), each
// wave appended to the checkpoint in shadow order.
func trainBatchedSet(ctx context.Context, o *RecoNNOptions, arch models.Arch, recipe *shadowRecipe, initSeed uint64, F int,
	set *shadowSet, file *shadowFile, feat func(int, []float64, int), progress func(int), report func(int)) error {
	m, d := o.Shadows, o.Fixed.Dim()
	P := recipe.p
	srng := rand.New(rand.NewPCG(o.Seed, o.Seed^0x736861646f7773)) // "shadows"
	perm := srng.Perm(o.Pool.N)
	seeds := make([]uint64, m)
	for k := range seeds {
		seeds[k] = srng.Uint64()
	}
	n0 := o.Fixed.N
	fx, fsq := make([]float64, n0*d), make([]float64, n0)
	for i := 0; i < n0; i++ {
		for j, v := range o.Fixed.Image(i) {
			fx[i*d+j] = float64(v)
			fsq[i] += float64(v) * float64(v)
		}
	}
	var shared []float64
	if o.SameInit {
		shared = models.InitParams(arch, initSeed)
	}
	bs := o.ShadowBlock
	if bs <= 0 {
		bs = 32
	}
	par := o.Parallel
	if par <= 0 {
		par = runtime.GOMAXPROCS(0)
	}
	set.blockSize, set.parallel = bs, par
	type block struct {
		lo, hi int
		out    []float64
		err    error
	}
	next := set.loaded
	for next < m {
		var wave []*block
		for w := 0; w < par && next < m; w++ {
			hi := min(m, next+bs)
			wave = append(wave, &block{lo: next, hi: hi, out: make([]float64, (hi-next)*P)})
			next = hi
		}
		done := make(chan struct{}, len(wave))
		for _, b := range wave {
			go func() {
				defer func() { done <- struct{}{} }()
				S := b.hi - b.lo
				zs, labels, init := make([]float64, S*d), make([]int, S), make([]float64, S*P)
				noise := make([]*rand.Rand, S)
				for k := 0; k < S; k++ {
					i := perm[(b.lo+k)%len(perm)]
					for j, v := range o.Pool.Image(i) {
						zs[k*d+j] = float64(v)
					}
					labels[k] = o.Pool.Labels[i]
					p0 := shared
					if p0 == nil {
						p0 = models.InitParams(arch, seeds[b.lo+k])
					}
					for j, v := range p0 {
						init[k*P+j] = float64(float32(v)) // train.Run starts from the float32 model
					}
					noise[k] = rand.New(rand.NewPCG(seeds[b.lo+k], 0x6e6f697365)) // "noise"
				}
				b.err = recipe.trainShadows(ctx, fx, fsq, o.Fixed.Labels, zs, labels, init, noise, b.out)
			}()
		}
		for range wave {
			<-done
		}
		for _, b := range wave {
			if b.err != nil {
				return fmt.Errorf("reconn shadows %d–%d: %w", b.lo+1, b.hi, b.err)
			}
			for k := b.lo; k < b.hi; k++ {
				i := perm[k%len(perm)]
				feat(k, b.out[(k-b.lo)*P:(k-b.lo+1)*P], o.Pool.Labels[i])
				set.pool = append(set.pool, i)
			}
			if file != nil {
				if err := file.append(set.xs[b.lo*F:b.hi*F], set.pool[b.lo:b.hi]); err != nil {
					return err
				}
			}
			progress(b.hi - b.lo)
		}
		report(next)
	}
	return nil
}
