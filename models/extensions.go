package models

import (
	"fmt"
	"strings"
)

// Ext names one optional Backend extension (a bit set of them: Ext values or'ed).
// The network finds each with extensionOf, which Restrict can hide, so that each
// fast path can be tested against the fallback the network runs without it, in every
// valid combination (ExtSubsets, CheckExtensionSubsets).
type Ext uint

const (
	// ExtDeviceOps is DeviceOps.
	ExtDeviceOps Ext = 1 << iota
	// ExtBatchedGemm is BatchedGemmer.
	ExtBatchedGemm
	// ExtRowIm2col is RowIm2coler.
	ExtRowIm2col
	// ExtRowSqNorm is RowSqNormer.
	ExtRowSqNorm
	// ExtTangentBatch is TangentBatcher; the network uses it only with DeviceOps
	// and BatchedGemmer.
	ExtTangentBatch
	// ExtChunker is Chunker.
	ExtChunker
	// ExtDeviceMemory is DeviceMemory; when its DeviceMemory() is true the network
	// needs every other device extension and cannot run without it.
	ExtDeviceMemory
	// ExtHostKernels is the CPU backend's capability: its packed float32 GEMM's
	// layouts (patch-major conv matrices, fused FIL reductions, tangent windows,
	// transposed dense weights) and its vectorised scaled accumulation.
	ExtHostKernels

	extAll = ExtHostKernels<<1 - 1
)

var extNames = []string{"DeviceOps", "BatchedGemmer", "RowIm2coler", "RowSqNormer", "TangentBatcher", "Chunker", "DeviceMemory", "HostKernels"}

// String lists the extensions in e, "none" for the empty set.
func (e Ext) String() string {
	var s []string
	for i, name := range extNames {
		if e&(1<<i) != 0 {
			s = append(s, name)
		}
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, "+")
}

// hostKernels is ExtHostKernels: the capability the network asks of the CPU backend
// instead of its concrete type.
type hostKernels[T Float] interface {
	// packedGemm is the packed float32 GEMM the backend's Gemm runs on (nil: gonum's).
	packedGemm() *packedSgemm
	// addScaled adds sc·g to acc.
	addScaled(acc []float64, sc float64, g []T)
}

// restricted is a Backend with some extensions hidden (Restrict). It embeds only
// Backend, so none of the inner backend's extensions show through its method set;
// extensionOf finds the ones not hidden on the inner backend.
type restricted[T Float] struct {
	Backend[T]
	hide Ext
}

// masked is implemented only by restricted (the method is unexported).
type masked[T Float] interface {
	masked() (inner Backend[T], hide Ext)
}

func (r *restricted[T]) masked() (Backend[T], Ext) { return r.Backend, r.hide }

// Restrict returns be with the extensions in hide hidden from networks built on it:
// they run the fallback of each hidden extension (host loops, per-call GEMMs, the
// CPU's chunk sizes…) on be's remaining methods. It is for tests, as gonum hides its
// fast paths behind wrappers; ExtSubsets says which combinations a network accepts.
func Restrict[T Float](be Backend[T], hide Ext) Backend[T] {
	return &restricted[T]{Backend: be, hide: hide}
}

// extensionOf returns be's extension E (x names it) unless a Restrict wrapper hides it.
func extensionOf[E any, T Float](be Backend[T], x Ext) (E, bool) {
	for {
		m, ok := be.(masked[T])
		if !ok {
			break
		}
		var inner Backend[T]
		var hide Ext
		inner, hide = m.masked()
		if hide&x != 0 {
			var zero E
			return zero, false
		}
		be = inner
	}
	e, ok := be.(E)
	return e, ok
}

// Extensions returns the set of optional extensions be offers to a network.
func Extensions[T Float](be Backend[T]) Ext {
	var e Ext
	has := func(x Ext, ok bool) {
		if ok {
			e |= x
		}
	}
	_, ok := extensionOf[DeviceOps[T]](be, ExtDeviceOps)
	has(ExtDeviceOps, ok)
	_, ok = extensionOf[BatchedGemmer[T]](be, ExtBatchedGemm)
	has(ExtBatchedGemm, ok)
	_, ok = extensionOf[RowIm2coler[T]](be, ExtRowIm2col)
	has(ExtRowIm2col, ok)
	_, ok = extensionOf[RowSqNormer[T]](be, ExtRowSqNorm)
	has(ExtRowSqNorm, ok)
	_, ok = extensionOf[TangentBatcher[T]](be, ExtTangentBatch)
	has(ExtTangentBatch, ok)
	_, ok = extensionOf[Chunker](be, ExtChunker)
	has(ExtChunker, ok)
	_, ok = extensionOf[DeviceMemory[T]](be, ExtDeviceMemory)
	has(ExtDeviceMemory, ok)
	_, ok = extensionOf[hostKernels[T]](be, ExtHostKernels)
	has(ExtHostKernels, ok)
	return e
}

// plainDeviceMemory reports whether be hands out plain device memory.
func plainDeviceMemory[T Float](be Backend[T]) bool {
	dm, ok := extensionOf[DeviceMemory[T]](be, ExtDeviceMemory)
	return ok && dm.DeviceMemory()
}

// ExtSubsets returns the subsets of be's extensions that a network accepts and that
// differ in what it runs, the full set first and the empty set last (where valid):
//   - TangentBatcher only with DeviceOps and BatchedGemmer (without them the network
//     ignores it, so those subsets repeat others);
//   - with plain device memory (DeviceMemory() true) only the full set: the network
//     needs every device extension then, and cannot run on that memory without
//     DeviceMemory;
//   - a DeviceMemory whose DeviceMemory() is false changes nothing, so it stays as be
//     has it.
func ExtSubsets[T Float](be Backend[T]) []Ext {
	have := Extensions(be)
	if plainDeviceMemory(be) {
		return []Ext{have}
	}
	free := have &^ ExtDeviceMemory
	var out []Ext
	for s := free; ; s = (s - 1) & free {
		if s&ExtTangentBatch == 0 || s&(ExtDeviceOps|ExtBatchedGemm) == ExtDeviceOps|ExtBatchedGemm {
			out = append(out, s|have&ExtDeviceMemory)
		}
		if s == 0 {
			break
		}
	}
	return out
}

// CheckExtensionSubsets runs the conformance suite on be restricted to each subset
// of its extensions from ExtSubsets, on the architectures named (all built-in ones
// when none): against the float64 CPU reference (as CheckBackend) and against be
// with all its extensions, each within tol. It returns an error naming the subset,
// architecture and quantity of the first miss.
func CheckExtensionSubsets(be Backend[float32], tol float64, archs ...string) error {
	have := Extensions(be)
	for _, keep := range ExtSubsets(be) {
		sub := Restrict(be, have&^keep)
		if got := Extensions(sub); got != keep {
			return fmt.Errorf("backend %s restricted to %v offers %v", be.Name(), keep, got)
		}
		if err := checkBackend(sub, tol, be, archs); err != nil {
			return fmt.Errorf("extensions %v: %w", keep, err)
		}
	}
	return nil
}
