package cuda

import (
	"fmt"
	"unsafe"

	"github.com/dpfil/dpfil/models"
)

// models.DeviceMemory: the network's last host-side steps as kernels and copies, for
// the plain device memory of NewDeviceBackend (on managed memory the network does
// them on the host and never calls these).

// DeviceMemory reports whether Alloc returns plain device memory.
func (b *Backend) DeviceMemory() bool { return b.plain }

// OnDevice reports whether x is plain device memory from this backend.
func (b *Backend) OnDevice(x []float32) bool {
	if !b.plain || len(x) == 0 {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.owns(unsafe.Pointer(unsafe.SliceData(x)), 4*len(x))
}

// devF64 returns the device pointer of x, which must be device memory of this backend
// (b.mu held); nil and a sticky error otherwise.
func (b *Backend) devF64(what string, x []float64) unsafe.Pointer {
	if len(x) == 0 {
		return nil
	}
	p := unsafe.Pointer(unsafe.SliceData(x))
	if !b.owns(p, 8*len(x)) {
		b.fail(fmt.Errorf("cuda: %s: %d float64 at %p are not device memory of this backend", what, len(x), p))
		return nil
	}
	return p
}

// copyBytes copies n bytes between host and device memory in whichever direction
// the two ends are (b.mu held, inside a call).
func (b *Backend) copyBytes(dst, src unsafe.Pointer, n int) {
	dd, sd := b.owns(dst, n), b.owns(src, n)
	switch {
	case !b.plain:
		// Managed memory: the host may read and write it once the device is idle.
		if err := b.gd.Sync(); err != nil {
			b.fail(fmt.Errorf("cuda: synchronize: %w", err))
			return
		}
		b.synced = true
		copy(unsafe.Slice((*byte)(dst), n), unsafe.Slice((*byte)(src), n))
	case dd && sd:
		if err := b.gd.CopyDtoD(dst, src, n); err != nil {
			b.fail(fmt.Errorf("cuda: copy %d bytes on the device: %w", n, err))
		}
	case dd:
		b.copyIn(dst, src, n)
	case sd:
		b.synced = true
		b.copyOut(dst, src, n)
	default:
		copy(unsafe.Slice((*byte)(dst), n), unsafe.Slice((*byte)(src), n))
	}
}

// Copy copies src to dst (equal lengths), each host or device memory: queued when the
// destination is device memory, waiting for the device when it is host memory.
func (b *Backend) Copy(dst, src []float32) { copySlice(b, dst, src, "float32") }

// copySlice is Copy for elements of type E (named what in errors).
func copySlice[E float32 | float64](b *Backend, dst, src []E, what string) {
	if len(dst) != len(src) {
		b.mu.Lock()
		b.fail(fmt.Errorf("cuda: copy %d %s into %d", len(src), what, len(dst)))
		b.mu.Unlock()
		return
	}
	if len(src) == 0 || !b.begin() {
		return
	}
	defer b.end()
	b.copyBytes(unsafe.Pointer(unsafe.SliceData(dst)), unsafe.Pointer(unsafe.SliceData(src)), int(unsafe.Sizeof(E(0)))*len(src))
}

// AllocFloat64 returns n zeroed float64 of device memory (host memory after a driver
// error, as Alloc).
func (b *Backend) AllocFloat64(n int) []float64 { return allocSlice[float64](b, n) }

// CopyFloat64 is Copy for float64.
func (b *Backend) CopyFloat64(dst, src []float64) { copySlice(b, dst, src, "float64") }

// ZeroFloat64 sets device memory x to 0 (a queued memset).
func (b *Backend) ZeroFloat64(x []float64) {
	if len(x) == 0 || !b.begin() {
		return
	}
	defer b.end()
	p := b.devF64("zero", x)
	if p == nil {
		return
	}
	if err := b.gd.MemsetZero(p, 8*len(x)); err != nil {
		b.fail(fmt.Errorf("cuda: memset: %w", err))
	}
}

// clipArgs are a Clip's kernel arguments: mode (0 smooth, 1 hard), C and the GELU
// variant (0 exact, 1 tanh).
func clipArgs(c models.Clip) (mode int, C float64, gelu int) {
	if c.Mode == models.ClipHard {
		mode = 1
	}
	if c.GELU == models.GELUTanh {
		gelu = 1
	}
	return mode, c.C, gelu
}

// SoftmaxXent writes the rows' losses and logit gradients (k_softmax_xent).
func (b *Backend) SoftmaxXent(rows, classes int, z []float32, y []int, losses, dz []float32) {
	b.op("k_softmax_xent", rows, func() []any {
		return []any{rows, classes, b.dev(z[:rows*classes], false), b.ints(slotLabels, y[:rows]), b.dev(losses[:rows], true),
			b.dev(dz[:rows*classes], true)}
	})
}

// SoftmaxXentTangent writes the tangents of the logit gradients (k_softmax_xent_tangent).
func (b *Backend) SoftmaxXentTangent(cs, kc, classes int, y []int, dz, tz, tdz []float32) {
	rows := cs * kc
	b.op("k_softmax_xent_tangent", rows, func() []any {
		return []any{cs, kc, classes, b.ints(slotLabels, y[:cs]), b.dev(dz[:cs*classes], false), b.dev(tz[:rows*classes], false),
			b.dev(tdz[:rows*classes], true)}
	})
}

// ClipScales writes the clip factors of the squared norms sq (k_clip_scale).
func (b *Backend) ClipScales(c models.Clip, rows int, sq, scale []float64) {
	mode, C, gelu := clipArgs(c)
	b.op("k_clip_scale", rows, func() []any {
		return []any{rows, mode, C, gelu, b.devF64("clip scales", sq[:rows]), b.devF64("clip scales", scale[:rows])}
	})
}

// ClippedTangentSqNorms adds the samples' clipped-tangent squared norms to out
// (k_fil_combine).
func (b *Backend) ClippedTangentSqNorms(c models.Clip, cs, kc int, sq, gd, dd, out []float64) {
	mode, C, gelu := clipArgs(c)
	b.op("k_fil_combine", cs, func() []any {
		return []any{cs, kc, mode, C, gelu, b.devF64("FIL", sq[:cs]), b.devF64("FIL", gd[:cs*kc]), b.devF64("FIL", dd[:cs*kc]),
			b.devF64("FIL", out[:cs])}
	})
}

// ToFloat writes dst = float32(src) (k_f64_to_f32).
func (b *Backend) ToFloat(dst []float32, src []float64) {
	n := len(src)
	b.op("k_f64_to_f32", n, func() []any { return []any{n, b.devF64("convert", src), b.dev(dst[:n], true)} })
}

// ChannelAffine writes dst = (src − shift[c])·mul[c] per channel (k_channel_affine).
func (b *Backend) ChannelAffine(rows, C, hw int, shift, mul, src, dst []float32) {
	n := rows * C * hw
	b.op("k_channel_affine", n, func() []any {
		return []any{rows, C, hw, b.dev(shift[:C], false), b.dev(mul[:C], false), b.dev(src[:n], false), b.dev(dst[:n], true)}
	})
}

var _ models.DeviceMemory[float32] = (*Backend)(nil)
