package cuda

import (
	"errors"
	"fmt"
	"slices"
	"unsafe"

	"github.com/dpfil/dpfil/models"
)

// The device-resident DP-SGD step. On plain device memory a Model can keep
// a whole training run on the device: the training and test sets are uploaded once;
// the float64 master parameters, the momentum, the float32 parameters the network
// reads, the clipped sum and the released noisy sum live there; per step only the
// batch's indices (and labels; the FIL coordinates are drawn there from the trainer's
// PCG state, coords.go) go to the device and scalars (losses, FIL values, a divergence
// count, the draw's count) come back. The trainer (train, resident.go) drives
// it through the Resident* methods; the arithmetic is the CPU trainer's: the same
// counter-based noise (internal/philox ≡ dpfil.cu's dp_gauss_pair) and the same
// individually rounded float64 update, so a device run differs from the CPU run only
// by the float32 rounding of the engine's sums.

// resident is a Model's device-resident training state.
type resident struct {
	P, D            int
	train, test     unsafe.Pointer // the data sets: bytes (u8) or float32
	nTrain, nTest   int
	trainU8, testU8 bool
	w, v            []float64 // master parameters and momentum
	w32, sum        []float32 // the network's parameters; clipped, then released, sum
	x, fx           []float32 // the gathered batch and FIL members (grown)
	xIdx            []int     // the indices x holds
	bad             []float64 // per-thread non-finite counts of the update, their sumTree levels, then the draw's count
	lastGrad        *gradCall // the last ResidentGradSum, while ResidentFIL may reuse its pass
	// Device-drawn FIL coordinates (ResidentFILDrawn, coords.go).
	oneHot, oneHotHost []float32 // the one-hot value of each coordinate: device copy, host copy
	stub               [][]int   // coordinate lists of the right shape for the engine
	drawPending        bool      // a draw ran since the last update
	usedReady          bool      // coordsUsed holds the last draw's count
	coordsUsed         uint64    // PCG outputs the last draw consumed (read back by the update)
}

// updateThreads is the number of threads k_dpsgd_update runs for P parameters (each
// writes its non-finite count to bad).
func updateThreads(P int) int {
	pairs := (P + 1) / 2
	return min(maxGrid, (pairs+blockSize-1)/blockSize) * blockSize
}

// ErrNotResident is returned by the Resident* methods of a model that cannot keep a
// run on the device (managed memory) or has not been loaded.
var ErrNotResident = errors.New("cuda: device-resident training needs plain device memory and ResidentLoad first")

// Resident reports whether the model can keep a training run on the device: its
// backend allocates plain device memory.
func (m *Model) Resident() bool { return m.be.plain }

// u8Exact reports whether every value is b/255 for a byte b (then the data go to the
// device as bytes, a quarter of the float32 size, and k_gather_u8 restores them).
func u8Exact(x []float32) ([]byte, bool) {
	out := make([]byte, len(x))
	for i, v := range x {
		f := v*255 + 0.5
		if !(f >= 0 && f < 256) {
			return nil, false
		}
		b := byte(f)
		if float32(b)/255 != v {
			return nil, false
		}
		out[i] = b
	}
	return out, true
}

// upload copies a data set to the device (bytes when exact) and returns it.
func (m *Model) uploadSet(x []float32) (unsafe.Pointer, bool, error) {
	if len(x) == 0 {
		return nil, false, nil
	}
	b := m.be
	bytes, u8 := u8Exact(x)
	src, n := unsafe.Pointer(unsafe.SliceData(x)), 4*len(x)
	if u8 {
		src, n = unsafe.Pointer(unsafe.SliceData(bytes)), len(bytes)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err != nil {
		return nil, false, b.err
	}
	p := b.allocBytes(n)
	if p == nil || !b.copyIn(p, src, n) {
		return nil, false, b.err
	}
	return p, u8, nil
}

// ResidentLoad uploads the training set (nTrain samples) and the test set (nTest,
// may be 0) once and allocates the run's device state. Values that are all b/255 go
// as bytes.
func (m *Model) ResidentLoad(train []float32, nTrain int, test []float32, nTest int) error {
	if !m.be.plain {
		return ErrNotResident
	}
	D, P := m.InputDim(), m.NumParams()
	if len(train) != nTrain*D || len(test) != nTest*D || nTrain <= 0 {
		return fmt.Errorf("cuda: resident load: %d training and %d test values for %d and %d samples of %d", len(train), len(test), nTrain, nTest, D)
	}
	r := &resident{P: P, D: D, nTrain: nTrain, nTest: nTest}
	var err error
	if r.train, r.trainU8, err = m.uploadSet(train); err != nil {
		return fmt.Errorf("cuda: upload the training set: %w", err)
	}
	if r.test, r.testU8, err = m.uploadSet(test); err != nil {
		return fmt.Errorf("cuda: upload the test set: %w", err)
	}
	r.w, r.v = m.be.AllocFloat64(P), m.be.AllocFloat64(P)
	r.w32, r.sum = m.be.Alloc(P), m.be.Alloc(P)
	// The update's counts and their sum tree, then one double that k_draw_coords_fix
	// writes: the update's one copy to the host reads the total and that count.
	r.bad = m.be.AllocFloat64(sumTreeLen(updateThreads(P)) + 1)
	if err := m.be.Err(); err != nil {
		return fmt.Errorf("cuda: resident state: %w", err)
	}
	// The one-hot value of every input coordinate, for FIL coordinates drawn on the
	// device (ResidentFILDrawn): uploaded with the data.
	if _, err := m.oneHotTable(r); err != nil {
		return fmt.Errorf("cuda: resident state: %w", err)
	}
	m.res = r
	return nil
}

func (m *Model) resident() (*resident, error) {
	if m.res == nil {
		return nil, ErrNotResident
	}
	return m.res, m.be.Err()
}

// ResidentSetState uploads the master parameters and the momentum (the start of a
// repeat, or a checkpoint's) and derives the float32 parameters on the device.
func (m *Model) ResidentSetState(w, v []float64) error {
	r, err := m.resident()
	if err != nil {
		return err
	}
	if len(w) != r.P || len(v) != r.P {
		return fmt.Errorf("cuda: resident state: %d parameters and %d momenta, want %d", len(w), len(v), r.P)
	}
	r.lastGrad = nil // new parameters
	r.drawPending, r.usedReady = false, false
	m.be.CopyFloat64(r.w, w)
	m.be.CopyFloat64(r.v, v)
	m.be.ToFloat(r.w32, r.w)
	return m.check("resident state", nil)
}

// ResidentState copies the master parameters and (v not nil) the momentum to the
// host (a checkpoint, the end of a repeat; θ_t for a transcript).
func (m *Model) ResidentState(w, v []float64) error {
	r, err := m.resident()
	if err != nil {
		return err
	}
	m.be.CopyFloat64(w[:r.P], r.w)
	if v != nil {
		m.be.CopyFloat64(v[:r.P], r.v)
	}
	return m.check("resident state", nil)
}

// ResidentParams copies the float32 parameters (float32 of the master parameters) to
// the host.
func (m *Model) ResidentParams(dst []float32) error {
	return m.copyResident(dst, "resident parameters", func(r *resident) []float32 { return r.w32 })
}

// copyResident copies the P float32 values of the resident buffer pick chooses to
// dst on the host; what names the buffer in an error.
func (m *Model) copyResident(dst []float32, what string, pick func(*resident) []float32) error {
	r, err := m.resident()
	if err != nil {
		return err
	}
	m.be.Copy(dst[:r.P], pick(r))
	return m.check(what, nil)
}

// gather writes the rows idx of a device data set into dst (k_gather_u8/f32): the
// indices are the only host → device transfer.
func (b *Backend) gather(src unsafe.Pointer, u8 bool, d int, idx []int, dst []float32) {
	name := "k_gather_f32"
	if u8 {
		name = "k_gather_u8"
	}
	rows := len(idx)
	b.op(name, rows*d, func() []any { return []any{rows, d, b.ints(slotGather, idx), src, b.dev(dst[:rows*d], true)} })
}

// batch returns the device rows idx of the training set in buf (grown), reusing x
// when it holds the same rows.
func (m *Model) batch(r *resident, idx []int, buf *[]float32, track bool) []float32 {
	n := len(idx) * r.D
	// A graphed call gathers always: its work may not depend on the calls before.
	m.be.mu.Lock()
	graphing := m.be.graphing()
	m.be.mu.Unlock()
	if track && !graphing && len(r.xIdx) == len(idx) && len(*buf) >= n {
		same := true
		for i, v := range idx {
			if r.xIdx[i] != v {
				same = false
				break
			}
		}
		if same {
			return (*buf)[:n]
		}
	}
	if len(*buf) < n {
		*buf = m.be.Alloc(n)
	}
	m.be.gather(r.train, r.trainU8, r.D, idx, (*buf)[:n])
	if track {
		r.xIdx = append(r.xIdx[:0], idx...)
	}
	return (*buf)[:n]
}

// ResidentGradSum gathers the batch idx (labels y) on the device and writes the sum
// of its clipped gradients to the device sum, the per-sample losses to losses (the
// one wait of the call). An empty batch gives a zero sum.
func (m *Model) ResidentGradSum(idx, y []int, clip models.Clip, losses []float64) error {
	r, err := m.resident()
	if err != nil {
		return err
	}
	r.lastGrad = nil
	if len(idx) == 0 {
		m.be.Zero(r.sum)
		return m.check("clipped gradient sum", nil)
	}
	for _, i := range idx {
		if i < 0 || i >= r.nTrain {
			return fmt.Errorf("cuda: batch index %d outside [0,%d)", i, r.nTrain)
		}
	}
	key := fmt.Sprintf("grad/%d/%+v", len(idx), clip)
	err = m.check("clipped gradient sum", m.be.graphCall(key, func() error {
		x := m.batch(r, idx, &r.x, true)
		return m.inner.ClippedGradSum(r.w32, x, y, clip, r.sum, losses)
	}))
	if err == nil {
		r.lastGrad = &gradCall{idx: slices.Clone(idx), y: slices.Clone(y), clip: clip}
	}
	return err
}

// gradCall is a ResidentGradSum whose forward and backward pass ResidentFIL may
// reuse: its batch, labels and clip, at the current parameters.
type gradCall struct {
	idx, y []int
	clip   models.Clip
}

// reusesGrad reports whether a FIL step of the rows idx (labels y, clip, k
// directions) can reuse the forward and backward pass of the last ResidentGradSum:
// the same rows and labels, the parameters unchanged since (ResidentUpdate,
// ResidentSetState and ResidentLoad forget it), and the network's workspace still
// holding that pass as one chunk that the FIL step's chunk equals
// (models.Network.FirstOrderReusable).
func (m *Model) reusesGrad(r *resident, idx, y []int, clip models.Clip, k int) bool {
	g := r.lastGrad
	return g != nil && slices.Equal(g.idx, idx) && slices.Equal(g.y, y) && g.clip == clip && m.net.FirstOrderReusable(len(idx), k)
}

// ResidentFIL writes the FIL norms (models.Model.FILSqNorms) of the training rows idx
// (labels y) at the current parameters to out.
func (m *Model) ResidentFIL(idx, y []int, clip models.Clip, coords [][]int, out []float64) error {
	r, err := m.resident()
	if err != nil {
		return err
	}
	for _, i := range idx {
		if i < 0 || i >= r.nTrain {
			return fmt.Errorf("cuda: FIL index %d outside [0,%d)", i, r.nTrain)
		}
	}
	k := 0
	for _, c := range coords {
		k = max(k, len(c))
	}
	return m.residentFIL(r, "", idx, y, clip, coords, k, out)
}

// residentFIL is ResidentFIL's call of the engine; kind tells its graphs apart.
func (m *Model) residentFIL(r *resident, kind string, idx, y []int, clip models.Clip, coords [][]int, k int, out []float64) error {
	if m.reusesGrad(r, idx, y, clip, k) {
		// The FIL members are the batch just summed (fil_rate 1): its forward and
		// backward pass are still in the workspace, and its rows in r.x.
		key := fmt.Sprintf("%sfil-after-grad/%d/%d/%+v", kind, len(idx), k, clip)
		return m.check("FIL", m.be.graphCall(key, func() error {
			return m.net.FILSqNormsAfterGradSum(r.w32, r.x[:len(idx)*r.D], y, len(idx), clip, coords, out)
		}))
	}
	key := fmt.Sprintf("%sfil/%d/%d/%+v", kind, len(idx), k, clip)
	return m.check("FIL", m.be.graphCall(key, func() error {
		// The batch's rows when the FIL members are the batch (fil_rate 1), else gathered.
		x := m.batch(r, idx, &r.x, true)
		return m.inner.FILSqNorms(r.w32, x, y, clip, coords, out)
	}))
}

// ResidentUpdate privatises the device sum and applies the momentum update on the
// device (k_dpsgd_update: train's addNoise and momentumSGD, the same roundings):
// released = float32(sum + std·z) with z the Philox normals of (key, step, coordinate)
// (std = 0: no noise), then ḡ = released/denom, g = ḡ + wd·w, v = mom·v + g,
// w = w − lr·v and the float32 parameters. It returns how many parameters are not
// finite (one wait: that count).
func (m *Model) ResidentUpdate(key uint64, step int, std, denom, lr, mom, wd float64) (int, error) {
	r, err := m.resident()
	if err != nil {
		return 0, err
	}
	r.lastGrad = nil // new parameters
	b := m.be
	pairs := (r.P + 1) / 2
	threads := updateThreads(r.P)
	if !b.begin() {
		return 0, b.Err()
	}
	part := unsafe.Pointer(unsafe.SliceData(r.bad))
	b.launch("k_dpsgd_update", pairs, r.P, int64(key), int64(step), std, denom, lr, mom, wd,
		unsafe.Pointer(unsafe.SliceData(r.sum)), unsafe.Pointer(unsafe.SliceData(r.w)), unsafe.Pointer(unsafe.SliceData(r.v)),
		unsafe.Pointer(unsafe.SliceData(r.w32)), part)
	// The per-thread counts folded by a multi-block sum (reduce.go), not one thread;
	// the total is the sum tree's last value, followed by the last coordinate draw's
	// count (ResidentFILDrawn): one copy brings both.
	var nb [2]float64
	if total := b.sumTree(threads, part); total != nil {
		b.synced = true
		b.copyOut(unsafe.Pointer(&nb[0]), total, 16)
	}
	b.end()
	if err := m.check("update", nil); err != nil {
		return 0, err
	}
	if r.drawPending {
		r.coordsUsed, r.usedReady, r.drawPending = uint64(nb[1]), true, false
	}
	return int(nb[0]), nil
}

// ResidentReleased copies the released noisy sum of the last update to the host (for
// a transcript: P values).
func (m *Model) ResidentReleased(dst []float32) error {
	return m.copyResident(dst, "released sum", func(r *resident) []float32 { return r.sum })
}

// ResidentLogits writes the logits of samples s0 … s0+n−1 of the device test set
// (test) or training set to out (host), at the current parameters.
func (m *Model) ResidentLogits(test bool, s0, n int, out []float32) error {
	r, err := m.resident()
	if err != nil {
		return err
	}
	src, u8, N := r.train, r.trainU8, r.nTrain
	if test {
		src, u8, N = r.test, r.testU8, r.nTest
	}
	if s0 < 0 || n <= 0 || s0+n > N {
		return fmt.Errorf("cuda: logits of samples [%d,%d) of %d", s0, s0+n, N)
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = s0 + i
	}
	if len(r.fx) < n*r.D {
		r.fx = m.be.Alloc(n * r.D)
	}
	x := r.fx[:n*r.D]
	m.be.gather(src, u8, r.D, idx, x)
	return m.check("logits", m.inner.Logits(r.w32, x, n, out))
}

// DeviceCounts returns the driver's counts (transfers, synchronisations, launches)
// since the model was opened.
func (m *Model) DeviceCounts() models.DeviceCounts { return m.be.Counts() }

// DeviceCopy returns a copy of x in device memory (plain memory; x itself on managed
// memory): inputs that stay on the device across calls, as in a resident step.
func (m *Model) DeviceCopy(x []float32) []float32 {
	if !m.be.plain || len(x) == 0 {
		return x
	}
	d := m.be.Alloc(len(x))
	m.be.Copy(d, x)
	return d
}
