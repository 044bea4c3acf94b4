package models

import (
	"reflect"
	"strings"
	"testing"
)

// The fakes below only give a method set (their nil embedded extensions are never
// called): ExtSubsets and Restrict look at types alone.
type fakeDevice struct {
	Backend[float32]
	DeviceOps[float32]
	BatchedGemmer[float32]
	TangentBatcher[float32]
}

type fakePlain struct {
	Backend[float32]
	DeviceOps[float32]
	BatchedGemmer[float32]
	RowIm2coler[float32]
	RowSqNormer[float32]
	TangentBatcher[float32]
	Chunker
	deviceMemory32
}

// managedMem is a DeviceMemory that reports host-addressable memory.
type managedMem struct{ deviceMemory32 }

type deviceMemory32 = DeviceMemory[float32]

func (managedMem) DeviceMemory() bool { return false }

type plainMem struct{ deviceMemory32 }

func (plainMem) DeviceMemory() bool { return true }

func TestExtSubsets(t *testing.T) {
	const (
		do, bg, ri, rs, tb, ch, dm, hk = ExtDeviceOps, ExtBatchedGemm, ExtRowIm2col, ExtRowSqNorm, ExtTangentBatch, ExtChunker, ExtDeviceMemory, ExtHostKernels
	)
	devAll := do | bg | ri | rs | tb | ch | dm
	for _, c := range []struct {
		name string
		be   Backend[float32]
		have Ext
		want []Ext
	}{
		{"cpu", NewCPUBackend[float32](), hk, []Ext{hk, 0}},
		{"cpu float64 via Restrict", Restrict(NewCPUBackend[float32](), hk), 0, []Ext{0}},
		{"tangent batcher needs DeviceOps and BatchedGemmer", fakeDevice{}, do | bg | tb,
			[]Ext{do | bg | tb, do | bg, bg, do, 0}},
		{"restricted twice", Restrict(Restrict(fakeDevice{}, tb), bg), do, []Ext{do, 0}},
		{"plain device memory: all or nothing", fakePlain{deviceMemory32: plainMem{}}, devAll, []Ext{devAll}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Extensions(c.be); got != c.have {
				t.Fatalf("Extensions = %v, want %v", got, c.have)
			}
			if got := ExtSubsets(c.be); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("ExtSubsets = %v, want %v", got, c.want)
			}
		})
	}
	// Managed memory: DeviceMemory stays, every other subset is valid (TangentBatcher
	// only with DeviceOps and BatchedGemmer): 2⁵ subsets of the five independent
	// extensions plus the 2³ with TangentBatcher.
	subs := ExtSubsets[float32](fakePlain{deviceMemory32: managedMem{}})
	if len(subs) != 40 || subs[0] != devAll || subs[len(subs)-1] != dm {
		t.Fatalf("managed memory: %d subsets from %v to %v, want 40 from %v to %v", len(subs), subs[0], subs[len(subs)-1], devAll, dm)
	}
	seen := map[Ext]bool{}
	for _, s := range subs {
		if seen[s] || s&dm == 0 || (s&tb != 0 && s&(do|bg) != do|bg) {
			t.Fatalf("managed memory: subset %v repeated or invalid", s)
		}
		seen[s] = true
	}
	if got := (do | tb).String(); got != "DeviceOps+TangentBatcher" {
		t.Errorf("String = %q", got)
	}
}

// rowIm2col adds RowIm2coler to the CPU backend as per-row calls; with drop, its
// Col2imRows leaves out the last row (a wrong extension: that row stays zero).
type rowIm2col struct {
	Backend[float32]
	drop bool
}

func (b rowIm2col) Im2colRows(g ConvGeom, m int, x []float32, inN int, cols []float32, ld int) {
	for r := 0; r < m; r++ {
		b.Im2col(g, x[r*inN:], cols[r*g.HWo():], ld)
	}
}

func (b rowIm2col) Col2imRows(g ConvGeom, m int, cols []float32, ld int, dx []float32, inN int) {
	clear(dx[:m*inN]) // RowIm2coler's contract: Col2imRows writes dx (Col2im adds)
	if b.drop {
		m--
	}
	for r := 0; r < m; r++ {
		b.Col2im(g, cols[r*g.HWo():], ld, dx[r*inN:])
	}
}

// TestCheckExtensionSubsets runs the conformance suite on every subset of the CPU
// backend's capability (its packed-GEMM layouts on and off) and of a CPU backend
// given a RowIm2coler, and shows that a wrong extension is caught in the subsets
// that hold it and hidden by Restrict.
func TestCheckExtensionSubsets(t *testing.T) {
	if err := CheckExtensionSubsets(NewCPUBackend[float32](), 1e-4); err != nil {
		t.Fatal(err)
	}
	good := rowIm2col{Backend: NewCPUBackend[float32]()}
	if got := Extensions[float32](good); got != ExtRowIm2col {
		t.Fatalf("Extensions = %v", got)
	}
	if err := CheckExtensionSubsets(good, 1e-4, "mnist-cnn", "cifar-cnn"); err != nil {
		t.Fatal(err)
	}
	bad := rowIm2col{Backend: NewCPUBackend[float32](), drop: true}
	err := CheckExtensionSubsets(bad, 1e-4, "mnist-cnn")
	if err == nil || !strings.Contains(err.Error(), "extensions RowIm2coler:") {
		t.Fatalf("a wrong RowIm2coler: error %v, want one naming the subset RowIm2coler", err)
	}
	if err := checkBackend(Restrict[float32](bad, ExtRowIm2col), 1e-4, nil, []string{"mnist-cnn"}); err != nil {
		t.Fatalf("the wrong RowIm2coler hidden: %v", err)
	}
}
