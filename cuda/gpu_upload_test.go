//go:build dpfil_cuda

package cuda

import (
	"testing"
	"unsafe"
)

// TestGPUUploadRing queues many copies to the device through the page-locked upload
// ring without waiting — small ones that wrap the ring several times and two of more
// than half its size, which force a wait (counted as a hidden synchronisation) — and
// reads everything back once. The stand-in reads page-locked memory when a queued
// copy runs and fails if the host changed it before: the ring must not be reused
// while a queued copy still reads it.
func TestGPUUploadRing(t *testing.T) {
	d, err := OpenGPU(0)
	if err != nil {
		t.Fatal(err)
	}
	g := d.(*GPU)
	defer g.Close()
	const small, count, big = 8 << 10, 1200, pinRingBytes/2 + 4096
	total := small*count + 2*big
	dev, err := g.Alloc(total)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]byte, total)
	for i := range want {
		want[i] = byte(i*7 + i/small)
	}
	buf := make([]byte, big) // one host buffer, reused at once for every copy
	off := 0
	put := func(n int) {
		copy(buf, want[off:off+n])
		if err := g.CopyHtoD(unsafe.Add(dev, off), unsafe.Pointer(&buf[0]), n); err != nil {
			t.Fatal(err)
		}
		clear(buf[:n])
		off += n
	}
	hidden := g.HiddenSyncs()
	for i := 0; i < count; i++ {
		put(small)
	}
	put(big)
	put(big)
	got := make([]byte, total)
	if err := g.CopyDtoH(unsafe.Pointer(&got[0]), dev, total); err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("byte %d: %d, want %d", i, got[i], want[i])
		}
	}
	if h := g.HiddenSyncs() - hidden; h < 2 || h > 4 {
		t.Errorf("%d waits for a full ring (%d bytes queued in a ring of %d), want 2–4", h, total, pinRingBytes)
	}
	if err := g.Free(dev); err != nil {
		t.Fatal(err)
	}
}
