package models

import (
	"errors"
	"fmt"
)

// DeviceMemory is an optional Backend extension for a device backend whose Alloc
// returns plain device memory (CUDA's cuMemAlloc): memory the host cannot address.
// With it the network never reads or writes a buffer from Alloc on the host: it
// copies inputs in and results out through the backend and runs the steps it
// otherwise does on the host as backend calls — loading the inputs, softmax
// cross-entropy and its tangent, the one-hot FIL seeds, the clip factors, the
// clipped sum's float64 accumulator and its conversion, the FIL reduction's
// combination, Normalize — so that nothing waits for the device until a result is
// copied to the host. Inputs (parameters, samples) may be host slices or slices from
// Alloc; results go to whichever the caller passes.
//
// The backend must also implement DeviceOps, BatchedGemmer, RowIm2coler, RowSqNormer,
// TangentBatcher and Chunker, and every layer kind of the network must have device
// passes (deviceMemoryKinds): NewNetwork refuses others. What needs host steps on
// device buffers is refused with ErrDeviceMemory: Tangent and InputGradOfClippedDot
// (explicit input and parameter tangents), FILSqNorms with input tangents that are
// not one-hot at the first parameter layer.
type DeviceMemory[T Float] interface {
	// DeviceMemory reports whether Alloc returns plain device memory (a backend may
	// offer both kinds; false: the network treats its memory as host memory).
	DeviceMemory() bool
	// OnDevice reports whether x lies in memory from Alloc or AllocFloat64.
	OnDevice(x []T) bool
	// Copy copies src to dst (equal lengths), each host or device memory. A copy to
	// the host waits for the device.
	Copy(dst, src []T)
	// AllocFloat64 returns n zeroed float64 of device memory.
	AllocFloat64(n int) []float64
	// CopyFloat64 is Copy for float64 (device or host memory).
	CopyFloat64(dst, src []float64)
	// ZeroFloat64 sets device memory x to 0.
	ZeroFloat64(x []float64)
	// SoftmaxXent writes, for rows rows of classes logits z and labels y, the loss
	// logsumexp(z) − z[y] to losses and softmax(z) − onehot(y) to dz (in float64, as
	// the network's host step).
	SoftmaxXent(rows, classes int, z []T, y []int, losses, dz []T)
	// SoftmaxXentTangent writes the tangent of the logits' gradient for cs samples
	// with kc directions (row s·kc+d of tz and tdz): p = dz_s + onehot(y_s),
	// tdz = p ⊙ (ż − pᵀż).
	SoftmaxXentTangent(cs, kc, classes int, y []int, dz, tz, tdz []T)
	// ClipScales writes scale[r] = c.Scale(√sq[r]) (device memory).
	ClipScales(c Clip, rows int, sq, scale []float64)
	// ClippedTangentSqNorms adds to out[s], for cs samples with kc directions each,
	// Σ_j of the clipped tangent's squared norm from sq[s] = ‖g‖², gd[s·kc+j] = gᵀġ
	// and dd[s·kc+j] = ‖ġ‖² (clippedTangentSqNorm; all device memory).
	ClippedTangentSqNorms(c Clip, cs, kc int, sq, gd, dd, out []float64)
	// ToFloat writes dst[i] = T(src[i]) (both device memory).
	ToFloat(dst []T, src []float64)
	// ChannelAffine writes dst[r][c][k] = (src[r][c][k] − shift[c])·mul[c] for rows
	// rows of C×hw values (shift and mul: C host values).
	ChannelAffine(rows, C, hw int, shift, mul, src, dst []T)
}

// ErrDeviceMemory is returned for what a network on plain device memory cannot do.
var ErrDeviceMemory = errors.New("not available on plain device memory (the engine would touch device buffers on the host); use a backend on managed or host memory")

// deviceMemoryKinds are the layer kinds whose engine passes run entirely through
// backend calls on a DeviceMemory backend. A kind not listed here (a new plug-in,
// ReLU's host masks) keeps its host loops, so a network with it cannot be built on
// plain device memory.
var deviceMemoryKinds = map[LayerKind]bool{
	KindConv: true, KindDense: true, KindAvgPool: true, KindTanh: true, KindELU: true,
	KindFlatten: true, KindNormalize: true,
}

// deviceMemoryOf returns be's DeviceMemory extension when it hands out plain device
// memory, after checking that the network can run on it.
func (n *Network[T]) deviceMemoryOf(be Backend[T]) (DeviceMemory[T], error) {
	dm, ok := extensionOf[DeviceMemory[T]](be, ExtDeviceMemory)
	if !ok || !dm.DeviceMemory() {
		return nil, nil
	}
	if n.dops == nil || n.bg == nil || n.ri == nil || n.rs == nil || n.tb == nil {
		return nil, fmt.Errorf("network %s: backend %s has plain device memory but not every device extension", n.arch.Name, be.Name())
	}
	if n.ch == nil {
		return nil, fmt.Errorf("network %s: backend %s has plain device memory but no Chunker", n.arch.Name, be.Name())
	}
	for i, l := range n.layers {
		if !deviceMemoryKinds[l.spec.Kind] {
			return nil, fmt.Errorf("network %s layer %d: kind %s has no device passes for plain device memory (backend %s): %w",
				n.arch.Name, i, l.spec.Kind, be.Name(), ErrDeviceMemory)
		}
	}
	return dm, nil
}

// onHost reports whether x may be read on the host (not plain device memory).
func (n *Network[T]) onHost(x []T) bool { return n.dm == nil || !n.dm.OnDevice(x) }

// copyTo copies src to dst through the backend when it has plain device memory.
func (n *Network[T]) copyTo(dst, src []T) {
	if n.dm != nil {
		n.dm.Copy(dst, src)
		return
	}
	copy(dst, src)
}

// deviceScratch is a network's device-side result buffers on plain device memory
// (grown as needed): the clipped sum's accumulator, per-sample losses, squared
// gradient norms, FIL outputs and the FIL reduction's dot products.
type deviceScratch[T Float] struct {
	total, scale, gg, fil, gd, dd []float64
	losses                        []T
	spHost                        []T // the one-hot seeds' values, written on the host
	// firstOrder is the batch size of the clipped gradient sum whose forward and
	// backward pass the workspace still holds (one chunk of the whole batch), 0 when
	// none: workspaceFor clears it, since any later pass overwrites the workspace.
	firstOrder int
}

// f64 returns (*buf)[:n], reallocated on the device when too short.
func (n *Network[T]) f64(buf *[]float64, size int) []float64 {
	if len(*buf) < size {
		*buf = n.dm.AllocFloat64(size)
	}
	return (*buf)[:size]
}

// devLosses returns device buffers for size per-sample losses.
func (n *Network[T]) devLosses(size int) []T {
	if len(n.dev.losses) < size {
		n.dev.losses = n.be.Alloc(size)
	}
	return n.dev.losses[:size]
}

// lossesToHost copies the device losses of a batch to the host as float64.
func (n *Network[T]) lossesToHost(dev []T, out []float64) {
	h := make([]T, len(dev))
	n.dm.Copy(h, dev)
	for i, v := range h {
		out[i] = float64(v)
	}
}

// clippedGradSumDevice is ClippedGradSum on plain device memory: the clip factors, the
// float64 accumulation and the conversion run on the device; only the losses (and sum,
// when it is a host slice) are copied to the host, at the end.
func (n *Network[T]) clippedGradSumDevice(params, x []T, y []int, batch int, clip Clip, sum []T, losses []float64) {
	P := n.p
	total := n.f64(&n.dev.total, P)
	n.dm.ZeroFloat64(total)
	dl := n.devLosses(batch)
	n.firstOrder(params, x, y, batch, false, func(ws *workspace[T], s0, c int) {
		sc := n.f64(&n.dev.scale, c)
		n.dm.ClipScales(clip, c, ws.gsq[:c], sc)
		n.dops.ScaledRowSum(c, P, sc, ws.grads, total)
		n.dm.Copy(dl[s0:s0+c], ws.losses[:c])
	})
	if cs, _ := n.chunkSizes(batch, 0, false); cs == batch {
		n.dev.firstOrder = batch // set after the pass: its workspaceFor cleared it
	}
	if n.dm.OnDevice(sum) {
		n.dm.ToFloat(sum, total)
	} else {
		h := make([]float64, P)
		n.dm.CopyFloat64(h, total)
		for i, v := range h {
			sum[i] = T(v)
		}
	}
	n.lossesToHost(dl, losses)
}

// FirstOrderReusable reports whether FILSqNormsAfterGradSum can take a FIL step of
// batch samples with k directions from the forward and backward pass of the call
// just before it: that call was ClippedGradSum of batch samples on plain device
// memory, no pass ran on the network since, and both its first-order pass and the
// FIL step's chunk are one chunk of the whole batch.
func (n *Network[T]) FirstOrderReusable(batch, k int) bool {
	if n.dm == nil || batch <= 0 || k <= 0 || n.dev.firstOrder != batch {
		return false
	}
	cs, kc := n.chunkSizes(batch, k, false)
	return cs == batch && kc == k
}

// FILSqNormsAfterGradSum is FILSqNorms for the batch of the ClippedGradSum call just
// before it, with the same params, x, y and batch (the caller's contract: the network
// cannot see device memory change), when FirstOrderReusable: the FIL step reuses the
// activations, deltas, patch matrices, gradients and squared norms that call left in
// the workspace instead of running the forward and backward pass again, so it reads
// neither x nor y's losses, and its results are those of FILSqNorms bit for bit.
// Otherwise it fails.
func (n *Network[T]) FILSqNormsAfterGradSum(params, x []T, y []int, batch int, clip Clip, coords [][]int, out []float64) error {
	k, err := n.checkFILArgs(params, x, y, batch, clip, coords, out)
	if err != nil {
		return err
	}
	if !n.FirstOrderReusable(batch, k) {
		return fmt.Errorf("%s: FIL of %d samples with %d directions cannot reuse the workspace's first-order pass (last clipped sum of %d samples on plain device memory, one chunk each)",
			n.arch.Name, batch, k, n.dev.firstOrder)
	}
	clear(out)
	return n.filSqNormsDeviceFrom(params, x, y, batch, clip, coords, k, out, true)
}

// filSqNormsDevice is FILSqNorms on plain device memory: every chunk's reduction and
// its combination into the clipped tangents' norms stay on the device; the batch's
// values are copied to out at the end (one wait).
func (n *Network[T]) filSqNormsDevice(params, x []T, y []int, batch int, clip Clip, coords [][]int, k int, out []float64) error {
	return n.filSqNormsDeviceFrom(params, x, y, batch, clip, coords, k, out, false)
}

// filSqNormsDeviceFrom is filSqNormsDevice, reusing the workspace's first-order pass
// when reuse (FILSqNormsAfterGradSum).
func (n *Network[T]) filSqNormsDeviceFrom(params, x []T, y []int, batch int, clip Clip, coords [][]int, k int, out []float64, reuse bool) error {
	if !n.sparseFirst {
		return fmt.Errorf("%s: FIL with input tangents that are not one-hot at the first parameter layer: %w", n.arch.Name, ErrDeviceMemory)
	}
	gg := n.f64(&n.dev.gg, batch)
	fo := n.f64(&n.dev.fil, batch)
	n.dm.ZeroFloat64(fo)
	n.run(&tangentRun[T]{
		params: params, x: x, y: y, batch: batch, k: k, grads: true, coords: coords, reuseFirst: reuse,
		first: func(ws *workspace[T], s0, cs int) {
			n.dm.CopyFloat64(gg[s0:s0+cs], ws.gsq[:cs])
		},
		seeds:   func(*workspace[T], int, int, int, int, []T, []T) {},
		consume: func(*workspace[T], int, int, int, int, []T) {}, // consumeChunk runs instead
		consumeChunk: func(ws *workspace[T], s0, cs, j0, kc int) {
			gd, dd := n.f64(&n.dev.gd, cs*kc), n.f64(&n.dev.dd, cs*kc)
			n.tb.FILDotSqEnd(cs, kc, gd, dd)
			// Directions past a sample's coordinates are zero rows: they add 0.
			n.dm.ClippedTangentSqNorms(clip, cs, kc, gg[s0:s0+cs], gd, dd, fo[s0:s0+cs])
		},
	})
	n.dm.CopyFloat64(out, fo)
	return nil
}

// DeviceCounts is what a device driver did, counted at its interface: the transfers
// between host and device, the synchronisations (the host waiting for the device),
// and the work queued (cuda.Counts).
type DeviceCounts struct {
	HtoDBytes  int64 `json:"htod_bytes"`    // host → device bytes
	DtoHBytes  int64 `json:"dtoh_bytes"`    // device → host bytes
	DtoDBytes  int64 `json:"dtod_bytes"`    // device → device bytes
	HtoDCopies int64 `json:"htod_copies"`   // copies to the device
	DtoHCopies int64 `json:"dtoh_copies"`   // copies to the host (each a synchronisation)
	Syncs      int64 `json:"syncs"`         // synchronisations (waits and copies to the host)
	Launches   int64 `json:"launches"`      // kernel launches
	Gemms      int64 `json:"gemms"`         // SGEMM and strided-batched SGEMM calls
	Memsets    int64 `json:"memsets"`       // memsets
	Allocs     int64 `json:"allocs"`        // allocations
	AllocBytes int64 `json:"alloc_bytes"`   // bytes allocated (device and managed)
	Managed    int64 `json:"managed_bytes"` // of which managed memory
	// Graph work: the counts above include what each graph launch queued.
	GraphLaunches int64 `json:"graph_launches"` // CUDA graph launches
	Captures      int64 `json:"captures"`       // graphs captured
	// HostCalls are the driver calls that queue work or wait (a graph launch is one),
	// i.e. what the host pays per step.
	HostCalls int64 `json:"host_calls"`
}

// Add returns c + o.
func (c DeviceCounts) Add(o DeviceCounts) DeviceCounts {
	return DeviceCounts{c.HtoDBytes + o.HtoDBytes, c.DtoHBytes + o.DtoHBytes, c.DtoDBytes + o.DtoDBytes,
		c.HtoDCopies + o.HtoDCopies, c.DtoHCopies + o.DtoHCopies, c.Syncs + o.Syncs, c.Launches + o.Launches,
		c.Gemms + o.Gemms, c.Memsets + o.Memsets, c.Allocs + o.Allocs, c.AllocBytes + o.AllocBytes, c.Managed + o.Managed,
		c.GraphLaunches + o.GraphLaunches, c.Captures + o.Captures, c.HostCalls + o.HostCalls}
}

// Sub returns c − o (the counts of an interval).
func (c DeviceCounts) Sub(o DeviceCounts) DeviceCounts {
	return DeviceCounts{c.HtoDBytes - o.HtoDBytes, c.DtoHBytes - o.DtoHBytes, c.DtoDBytes - o.DtoDBytes,
		c.HtoDCopies - o.HtoDCopies, c.DtoHCopies - o.DtoHCopies, c.Syncs - o.Syncs, c.Launches - o.Launches,
		c.Gemms - o.Gemms, c.Memsets - o.Memsets, c.Allocs - o.Allocs, c.AllocBytes - o.AllocBytes, c.Managed - o.Managed,
		c.GraphLaunches - o.GraphLaunches, c.Captures - o.Captures, c.HostCalls - o.HostCalls}
}
