package train

import (
	"fmt"
	"slices"

	"github.com/dpfil/dpfil/data"
	"github.com/dpfil/dpfil/internal/pcgjump"
	"github.com/dpfil/dpfil/models"
)

// residentModel is a model whose device can keep a whole DP-SGD run (cuda.Model on
// plain device memory, cuda/resident.go): the training and test sets uploaded once;
// master parameters, momentum, the clipped sum, the noise and the update on the
// device; per step the batch indices (with labels, and the coordinate PCG's state:
// the device draws the FIL coordinates the host would) in and scalars (losses, FIL
// values, a divergence count, the PCG outputs the draw consumed) out. The noise is the CPU's (noise.go: the
// same Philox draws) and the update its arithmetic, so a resident run matches the CPU
// run of the same seed up to the float32 rounding of the engine's sums.
type residentModel interface {
	Resident() bool
	ResidentLoad(train []float32, nTrain int, test []float32, nTest int) error
	ResidentSetState(w, v []float64) error
	ResidentState(w, v []float64) error // v nil: the parameters only
	ResidentParams(dst []float32) error
	ResidentGradSum(idx, y []int, clip models.Clip, losses []float64) error
	ResidentFIL(idx, y []int, clip models.Clip, coords [][]int, out []float64) error
	// ResidentFILDrawn is ResidentFIL with the k coordinates of each member drawn on
	// the device as IntN(d) from the PCG whose MarshalBinary form is pcg (the values
	// filStep draws on the host); false: the device cannot draw for this call and did
	// nothing. ResidentCoordsUsed then gives, after the next ResidentUpdate, how many
	// PCG outputs the draw consumed.
	ResidentFILDrawn(idx, y []int, clip models.Clip, k, d int, pcg []byte, out []float64) (bool, error)
	ResidentCoordsUsed() (uint64, error)
	ResidentUpdate(key uint64, step int, std, denom, lr, mom, wd float64) (nonFinite int, err error)
	ResidentReleased(dst []float32) error
	ResidentLogits(test bool, s0, n int, out []float32) error
	DeviceCounts() models.DeviceCounts
}

// deviceCounter is a model on a device that counts its transfers and waits.
type deviceCounter interface {
	DeviceCounts() models.DeviceCounts
}

// DeviceReport is result.json's "device": what a run on a device moved between host
// and device and how often the host waited for it, per DP-SGD step (counted by the
// driver: cuda.Counts), over the steps this process ran (a resumed run counts its
// last segment).
type DeviceReport struct {
	Device string `json:"device"` // the device's name
	// Resident: the step stayed on the device (data uploaded once; indices in,
	// scalars out). Otherwise each step sent the batch and the parameters.
	Resident bool `json:"resident"`
	// NotResident says why a device run is not resident (empty when it is).
	NotResident  string `json:"not_resident,omitempty"`
	StepsCounted int    `json:"steps_counted"`
	// UploadBytes is what went to the device before the first step (data sets).
	UploadBytes int64 `json:"upload_bytes"`
	// PerStep is the mean over the counted steps, MaxStep the largest of each count.
	PerStep DeviceStepCounts `json:"per_step"`
	MaxStep DeviceStepCounts `json:"max_step"`
	// BatchIndexBytes is the mean size of a step's batch indices (4 bytes each), the
	// floor of PerStep.HtoDBytes.
	BatchIndexBytes float64 `json:"batch_index_bytes"`
}

// DeviceStepCounts are one step's counts.
type DeviceStepCounts struct {
	HtoDBytes float64 `json:"htod_bytes"`
	DtoHBytes float64 `json:"dtoh_bytes"`
	Syncs     float64 `json:"syncs"`
	Launches  float64 `json:"launches"`
	Gemms     float64 `json:"gemms"`
}

// deviceTally accumulates the per-step counts of a run.
type deviceTally struct {
	report           DeviceReport
	sum              DeviceStepCounts
	batchIndices     int64
	countsBeforeData models.DeviceCounts
}

// prepareResident decides whether the run keeps its steps on the device and uploads
// the data sets when it does (prepare, after the model and the FIL options).
func (s *setup) prepareResident(logf func(string, ...any)) error {
	dc, ok := s.model.(deviceCounter)
	if !ok {
		return nil
	}
	s.tally = &deviceTally{}
	if d, ok := s.model.(interface{ Device() string }); ok {
		s.tally.report.Device = d.Device()
	}
	rm, ok := s.model.(residentModel)
	why := ""
	switch {
	case !ok || !rm.Resident():
		why = "the model's backend uses managed memory"
	case s.tune != nil:
		why = "pretraining, pruning, freezing and learned noise run on the host"
	case s.extraFILOn():
		why = "η and label FIL need the engine's parameter-tangent passes (managed memory)"
	case s.cfg.IsAdam():
		why = "the device's update is momentum SGD; adam updates on the host"
	}
	if why != "" {
		s.tally.report.NotResident = why
		logf("device steps not resident: %s", why)
		return nil
	}
	before := dc.DeviceCounts()
	var test []float32
	nTest := 0
	if s.test != nil {
		test, nTest = s.test.Images, s.test.N
	}
	if err := rm.ResidentLoad(s.train.Images, s.train.N, test, nTest); err != nil {
		return fmt.Errorf("device-resident training: %w", err)
	}
	s.res = rm
	s.tally.report.Resident = true
	s.tally.report.UploadBytes = dc.DeviceCounts().Sub(before).HtoDBytes
	logf("device-resident training: %d training and %d test samples uploaded (%d bytes)", s.train.N, nTest, s.tally.report.UploadBytes)
	return nil
}

// startResident uploads the repeat's parameters and momentum (newWorker).
func (w *worker) startResident() error {
	w.res = w.s.res
	if w.res == nil {
		return nil
	}
	sgd, err := w.residentSGD()
	if err != nil {
		return err
	}
	if err := w.res.ResidentSetState(w.st.Params, sgd.velocity); err != nil {
		return fmt.Errorf("device-resident training: %w", err)
	}
	return nil
}

// residentSGD is the worker's momentum SGD, the only update the device runs
// (prepareResident keeps adam runs on the host).
func (w *worker) residentSGD() (*momentumSGD, error) {
	sgd, ok := w.opt.(*momentumSGD)
	if !ok {
		return nil, fmt.Errorf("device-resident training: the device updates with momentum SGD, not %s", w.s.cfg.Optimizer)
	}
	return sgd, nil
}

// residentSync copies the device's parameters and momentum into the repeat state
// and w.p32 (a checkpoint, the end of a repeat): float32 of the master parameters,
// as the device's.
func (w *worker) residentSync() error {
	if w.res == nil {
		return nil
	}
	sgd, err := w.residentSGD()
	if err != nil {
		return err
	}
	if err := w.res.ResidentState(w.st.Params, sgd.velocity); err != nil {
		return fmt.Errorf("device-resident training: %w", err)
	}
	w.st.Velocity = sgd.velocity
	w.syncParams()
	return nil
}

// countedStep runs one step and adds its device counts to the run's tally.
func (w *worker) countedStep() (int, error) {
	t := w.s.tally
	if t == nil {
		return w.step()
	}
	dc := w.s.model.(deviceCounter)
	before := dc.DeviceCounts()
	nb, err := w.step()
	if err != nil {
		return nb, err
	}
	c := dc.DeviceCounts().Sub(before)
	one := DeviceStepCounts{float64(c.HtoDBytes), float64(c.DtoHBytes), float64(c.Syncs), float64(c.Launches), float64(c.Gemms)}
	r := &t.report
	r.StepsCounted++
	t.batchIndices += int64(nb)
	t.sum = DeviceStepCounts{t.sum.HtoDBytes + one.HtoDBytes, t.sum.DtoHBytes + one.DtoHBytes, t.sum.Syncs + one.Syncs,
		t.sum.Launches + one.Launches, t.sum.Gemms + one.Gemms}
	r.MaxStep = DeviceStepCounts{max(r.MaxStep.HtoDBytes, one.HtoDBytes), max(r.MaxStep.DtoHBytes, one.DtoHBytes),
		max(r.MaxStep.Syncs, one.Syncs), max(r.MaxStep.Launches, one.Launches), max(r.MaxStep.Gemms, one.Gemms)}
	return nb, nil
}

// deviceReport returns the run's device counts (nil on the CPU).
func (s *setup) deviceReport() *DeviceReport {
	t := s.tally
	if t == nil {
		return nil
	}
	r := t.report
	if n := float64(r.StepsCounted); n > 0 {
		r.PerStep = DeviceStepCounts{t.sum.HtoDBytes / n, t.sum.DtoHBytes / n, t.sum.Syncs / n, t.sum.Launches / n, t.sum.Gemms / n}
		r.BatchIndexBytes = 4 * float64(t.batchIndices) / n
	}
	return &r
}

// residentStep is step on the device (same draws, same order): the batch's indices
// and labels go to the device, which gathers the batch, sums the clipped gradients,
// adds the noise and applies the update; the losses, the FIL values (filStep) and
// the divergence count come back.
func (w *worker) residentStep() (int, error) {
	s := w.s
	idx := w.sampler.next()
	nb := len(idx)
	w.y = slices.Grow(w.y[:0], nb)[:nb]
	for j, i := range idx {
		w.y[j] = s.train.Labels[i]
	}
	w.losses = slices.Grow(w.losses[:0], nb)[:nb]
	if err := w.res.ResidentGradSum(idx, w.y, s.clip, w.losses); err != nil {
		return 0, fmt.Errorf("step %d: clipped gradients: %w", w.st.Step+1, err)
	}
	if nb > 0 {
		loss := 0.0
		for _, l := range w.losses {
			loss += l
		}
		w.st.LastLoss = loss / float64(nb)
		if s.filK > 0 {
			if err := w.filStep(idx); err != nil {
				return 0, fmt.Errorf("step %d: %w", w.st.Step+1, err)
			}
		}
	}
	b := float64(s.cfg.Batch)
	if w.onStep != nil {
		// The adversary sees θ_t (before the update) and the released sum: both come
		// to the host for the transcript (P doubles and P floats a step, only when
		// recording).
		w.pre = slices.Grow(w.pre[:0], s.p)[:s.p]
		if err := w.res.ResidentState(w.pre, nil); err != nil {
			return 0, fmt.Errorf("step %d: %w", w.st.Step+1, err)
		}
	}
	key := uint64(w.noiseKey[0]) | uint64(w.noiseKey[1])<<32
	bad, err := w.res.ResidentUpdate(key, w.st.Step, s.priv.NoiseStd, b, s.cfg.LR, s.cfg.Momentum, s.cfg.WeightDecay)
	if err != nil {
		return 0, fmt.Errorf("step %d: update: %w", w.st.Step+1, err)
	}
	if err := w.skipDeviceCoords(); err != nil {
		return 0, fmt.Errorf("step %d: %w", w.st.Step+1, err)
	}
	if w.onStep != nil {
		if err := w.res.ResidentReleased(w.sum); err != nil {
			return 0, fmt.Errorf("step %d: %w", w.st.Step+1, err)
		}
		if err := w.record(idx, w.pre, b); err != nil {
			return 0, err
		}
	}
	if bad > 0 {
		return 0, fmt.Errorf("step %d: %w (%d parameters are not finite); lower lr or clip", w.st.Step+1, ErrDiverged, bad)
	}
	return w.finishStep(nb)
}

// residentFILDrawn is filStep's FIL call with the coordinates drawn on the device
// from the coordinate PCG's current state (resident, sampled coordinates): it
// reports false when the device cannot draw them for this call (the host then does).
// The PCG stays where it is until the update reads back what the draw consumed
// (skipDeviceCoords).
func (w *worker) residentFILDrawn(idx, y []int) (bool, error) {
	s := w.s
	if w.res == nil || s.cfg.FILExact {
		return false, nil
	}
	st, err := w.coordRNG.marshal()
	if err != nil {
		return false, err
	}
	drawn, err := w.res.ResidentFILDrawn(idx, y, s.clip, s.filK, s.d, st, w.sq)
	if err != nil {
		return false, err
	}
	w.coordsOnDevice = drawn
	return drawn, nil
}

// skipDeviceCoords advances the coordinate PCG past the outputs the step's device
// draw consumed (read back by the update), so that it stands where the host's own
// draws would have left it: the next step's draws and a checkpoint are exact.
func (w *worker) skipDeviceCoords() error {
	if !w.coordsOnDevice {
		return nil
	}
	w.coordsOnDevice = false
	n, err := w.res.ResidentCoordsUsed()
	if err != nil {
		return fmt.Errorf("FIL coordinates: %w", err)
	}
	if err := pcgjump.Advance(w.coordRNG.pcg, n); err != nil {
		return fmt.Errorf("FIL coordinates: skip %d outputs the device drew: %w", n, err)
	}
	return nil
}

// filSqNorms is filStep's FIL call: on the model, or on the device's copy of the
// training rows idx when resident.
func (w *worker) filSqNorms(idx []int, x []float32, y []int) error {
	if w.res != nil {
		return w.res.ResidentFIL(idx, y, w.s.clip, w.coords, w.sq)
	}
	return w.s.model.FILSqNorms(w.p32, x, y, w.s.clip, w.coords, w.sq)
}

// evaluate evaluates the current parameters on ds: the run's test set or the head
// of its training set, on the device's copies when resident.
func (w *worker) evaluate(ds *data.Dataset) (evaluation, error) {
	s := w.s
	if w.res == nil || ds == nil || ds.N == 0 {
		return evaluate(s.model, w.p32, ds, s.arch.Classes)
	}
	test := ds == s.test
	if !test && (ds.N > s.train.N || ds.Name != s.train.Name) {
		return evaluate(s.model, w.p32, ds, s.arch.Classes)
	}
	return evaluateWith(ds, s.arch.Classes, func(s0, n int, out []float32) error {
		return w.res.ResidentLogits(test, s0, n, out)
	})
}
