package cuda

import (
	"errors"
	"fmt"

	"github.com/dpfil/dpfil/models"
)

// Model is a models.Model whose network runs on a cuda Backend. After every call it
// checks the backend's sticky error, so a failed launch or allocation surfaces as an
// error instead of a wrong number.
type Model struct {
	inner models.Model
	net   *models.Network[float32]
	be    *Backend
	// params is the device copy of the caller's parameters, written once per call:
	// without it every GEMM that reads weights would stage them again.
	params []float32
	res    *resident // device-resident training (resident.go); nil until ResidentLoad
}

// NewModel builds arch on be.
func NewModel(arch models.Arch, be *Backend) (*Model, error) {
	if be == nil {
		return nil, fmt.Errorf("cuda model %s: nil backend", arch.Name)
	}
	inner, err := models.NewModel(arch, be)
	if err != nil {
		return nil, fmt.Errorf("cuda model: %w", err)
	}
	nm, ok := inner.(interface {
		Network() *models.Network[float32]
	})
	if !ok {
		return nil, fmt.Errorf("cuda model %s: engine model exposes no network", arch.Name)
	}
	params := be.Alloc(inner.NumParams())
	if err := be.Err(); err != nil {
		return nil, fmt.Errorf("cuda model %s: parameter buffer: %w", arch.Name, err)
	}
	return &Model{inner: inner, net: nm.Network(), be: be, params: params}, nil
}

// Open builds arch on a new backend over drv that allocates plain device memory
// (NewDeviceBackend); an architecture with a layer kind that has no device passes
// (models.ErrDeviceMemory) gets managed memory instead (NewBackend). Close releases
// both. On an error drv is closed too.
func Open(arch models.Arch, drv Driver) (*Model, error) {
	return open(arch, drv, true)
}

// OpenManaged is Open on managed memory: what the engine's parameter-tangent and
// input-gradient passes (η, label FIL, the attacks' second-order passes) need.
func OpenManaged(arch models.Arch, drv Driver) (*Model, error) {
	return open(arch, drv, false)
}

func open(arch models.Arch, drv Driver, plain bool) (*Model, error) {
	newBackend := NewBackend
	if plain {
		newBackend = NewDeviceBackend
	}
	be, err := newBackend(drv)
	if err != nil {
		if drv != nil {
			if cerr := drv.Close(); cerr != nil {
				err = errors.Join(err, cerr)
			}
		}
		return nil, err
	}
	m, err := NewModel(arch, be)
	if plain && errors.Is(err, models.ErrDeviceMemory) && be.Err() == nil {
		be.plain = false // nothing was allocated for the network: the same backend, managed
		m, err = NewModel(arch, be)
	}
	if err != nil {
		be.Close()
		return nil, err
	}
	return m, nil
}

// upload copies the caller's parameters to the device copy (wrong lengths are passed
// through for the engine to report); parameters that are device memory already are
// used as they are.
func (m *Model) upload(params []float32) []float32 {
	if len(params) != len(m.params) || m.be.OnDevice(params) {
		return params
	}
	if m.be.plain {
		m.be.Copy(m.params, params)
	} else {
		copy(m.params, params)
	}
	return m.params
}

func (m *Model) check(what string, err error) error {
	if err != nil {
		return err
	}
	if err := m.be.Err(); err != nil {
		return fmt.Errorf("%s on %s: %w", what, m.be.Device(), err)
	}
	return nil
}

// Arch returns the architecture.
func (m *Model) Arch() models.Arch { return m.inner.Arch() }

// NumParams is the length of the flat parameter vector.
func (m *Model) NumParams() int { return m.inner.NumParams() }

// InputDim is the number of input values per sample.
func (m *Model) InputDim() int { return m.inner.InputDim() }

// Init returns the stax-default initial parameters (drawn on the host).
func (m *Model) Init(seed uint64) []float32 { return m.inner.Init(seed) }

// Network returns the engine network (for options such as FIL w.r.t. normalised inputs).
func (m *Model) Network() *models.Network[float32] { return m.net }

// Device names the device the model runs on.
func (m *Model) Device() string { return m.be.Device() }

// PeakGFLOPs is the device's peak FP32 rate (non-tensor-core FMA), in GFLOP/s, when
// the driver knows it (the GPU driver computes it from SM count, clock and
// architecture), else 0.
func (m *Model) PeakGFLOPs() float64 {
	if p, ok := m.be.drv.Driver.(interface{ PeakFP32GFLOPs() float64 }); ok {
		return p.PeakFP32GFLOPs()
	}
	return 0
}

// Backend returns the model's backend.
func (m *Model) Backend() *Backend { return m.be }

// Logits writes the n×Classes logits of x to out.
func (m *Model) Logits(params, x []float32, n int, out []float32) error {
	return m.check("logits", m.inner.Logits(m.upload(params), x, n, out))
}

// ClippedGradSum writes the sum of the clipped per-sample gradients and the losses.
func (m *Model) ClippedGradSum(params, x []float32, y []int, clip models.Clip, sum []float32, losses []float64) error {
	return m.check("clipped gradient sum", m.inner.ClippedGradSum(m.upload(params), x, y, clip, sum, losses))
}

// FILSqNorms writes each sample's Σ_j ‖J e_{i_j}‖² of the clipped gradient.
func (m *Model) FILSqNorms(params, x []float32, y []int, clip models.Clip, coords [][]int, out []float64) error {
	return m.check("FIL", m.inner.FILSqNorms(m.upload(params), x, y, clip, coords, out))
}

// Close releases the backend and its driver.
func (m *Model) Close() error { return m.be.Close() }

var _ models.Model = (*Model)(nil)
