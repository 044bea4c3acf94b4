package cuda

import (
	"sync"
	"time"
	"unsafe"

	"github.com/dpfil/dpfil/models"
)

// Counts is what a driver did, counted at the Driver interface (counted): the
// transfers between host and device, the synchronisations (the host waiting for the
// device: Sync and CopyDtoH), and the work queued. The counts do not depend on the
// device, so the emulator and the stand-in give a GPU's numbers.
type Counts = models.DeviceCounts

// counted is a Driver that counts the calls to the driver it wraps. Work captured
// into a graph is counted when the graph is launched (each launch queues it again),
// so launches, GEMMs and bytes per step are the same captured or not; HostCalls
// counts what the host itself called.
type counted struct {
	Driver
	mu        sync.Mutex
	c         Counts
	wait      time.Duration // host time spent in CopyDtoH and Sync (waiting for the device)
	capturing bool
	capBase   Counts           // the counts when the capture began
	graphs    map[Graph]Counts // the work each graph queues
}

func newCounted(d Driver) *counted {
	if c, ok := d.(*counted); ok {
		return c
	}
	return &counted{Driver: d}
}

// Unwrap returns the driver d counts (wrapper).
func (d *counted) Unwrap() Driver { return d.Driver }

// Counts returns the counts so far, with the waits the driver made on its own (the
// GPU driver's full upload ring).
func (d *counted) Counts() Counts {
	d.mu.Lock()
	c := d.c
	d.mu.Unlock()
	if h, ok := d.Driver.(interface{ HiddenSyncs() int64 }); ok {
		c.Syncs += h.HiddenSyncs()
	}
	return c
}

// add counts one host call f; queued work recorded while capturing is counted again
// at each launch of its graph (the capture itself queues nothing).
func (d *counted) add(f func(c *Counts)) {
	d.mu.Lock()
	f(&d.c)
	d.c.HostCalls++
	d.mu.Unlock()
}

// graphWork is the queued work a capture recorded: launches, GEMMs, memsets and
// copies (not allocations).
func graphWork(c Counts) Counts {
	return Counts{HtoDBytes: c.HtoDBytes, DtoHBytes: c.DtoHBytes, DtoDBytes: c.DtoDBytes, HtoDCopies: c.HtoDCopies,
		DtoHCopies: c.DtoHCopies, Launches: c.Launches, Gemms: c.Gemms, Memsets: c.Memsets}
}

func (d *counted) BeginCapture() error {
	d.mu.Lock()
	d.capturing, d.capBase = true, d.c
	d.c.HostCalls++
	d.mu.Unlock()
	return d.Driver.BeginCapture()
}

func (d *counted) EndCapture() (Graph, error) {
	g, err := d.Driver.EndCapture()
	d.mu.Lock()
	defer d.mu.Unlock()
	d.c.HostCalls++
	if !d.capturing {
		return g, err
	}
	d.capturing = false
	// The capture queued nothing: take its work out of the counts until launched.
	w := graphWork(d.c.Sub(d.capBase))
	d.c = d.c.Sub(w)
	if err == nil {
		if d.graphs == nil {
			d.graphs = map[Graph]Counts{}
		}
		d.graphs[g] = w
		d.c.Captures++
	}
	return g, err
}

func (d *counted) LaunchGraph(g Graph) error {
	d.mu.Lock()
	w := d.graphs[g]
	hc := d.c.HostCalls + 1
	d.c = d.c.Add(w)
	d.c.HostCalls = hc
	d.c.GraphLaunches++
	d.mu.Unlock()
	return d.Driver.LaunchGraph(g)
}

func (d *counted) DestroyGraph(g Graph) error {
	d.mu.Lock()
	delete(d.graphs, g)
	d.mu.Unlock()
	return d.Driver.DestroyGraph(g)
}

func (d *counted) CopyHtoDPinned(dst, src unsafe.Pointer, n int) error {
	d.add(func(c *Counts) { c.HtoDCopies++; c.HtoDBytes += int64(n) })
	return d.Driver.CopyHtoDPinned(dst, src, n)
}

func (d *counted) CopyDtoHAsync(dst, src unsafe.Pointer, n int) error {
	d.add(func(c *Counts) { c.DtoHCopies++; c.DtoHBytes += int64(n) })
	return d.Driver.CopyDtoHAsync(dst, src, n)
}

func (d *counted) Alloc(n int) (unsafe.Pointer, error) {
	d.add(func(c *Counts) { c.Allocs++; c.AllocBytes += int64(n) })
	return d.Driver.Alloc(n)
}

func (d *counted) AllocManaged(n int) (unsafe.Pointer, error) {
	d.add(func(c *Counts) { c.Allocs++; c.AllocBytes += int64(n); c.Managed += int64(n) })
	return d.Driver.AllocManaged(n)
}

func (d *counted) MemsetZero(p unsafe.Pointer, n int) error {
	d.add(func(c *Counts) { c.Memsets++ })
	return d.Driver.MemsetZero(p, n)
}

func (d *counted) CopyHtoD(dst, src unsafe.Pointer, n int) error {
	d.add(func(c *Counts) { c.HtoDCopies++; c.HtoDBytes += int64(n) })
	return d.Driver.CopyHtoD(dst, src, n)
}

func (d *counted) CopyDtoD(dst, src unsafe.Pointer, n int) error {
	d.add(func(c *Counts) { c.DtoDBytes += int64(n) })
	return d.Driver.CopyDtoD(dst, src, n)
}

func (d *counted) CopyDtoH(dst, src unsafe.Pointer, n int) error {
	d.add(func(c *Counts) { c.DtoHCopies++; c.DtoHBytes += int64(n); c.Syncs++ })
	defer d.waited(time.Now())
	return d.Driver.CopyDtoH(dst, src, n)
}

func (d *counted) Launch(name string, grid, block Dim3, args []uint64) error {
	d.add(func(c *Counts) { c.Launches++ })
	return d.Driver.Launch(name, grid, block, args)
}

func (d *counted) Sgemm(transA, transB bool, m, n, k int, alpha float32, a unsafe.Pointer, lda int, b unsafe.Pointer, ldb int, beta float32, c unsafe.Pointer, ldc int) error {
	d.add(func(c *Counts) { c.Gemms++ })
	return d.Driver.Sgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

func (d *counted) SgemmStridedBatched(transA, transB bool, m, n, k int, alpha float32, a unsafe.Pointer, lda, strideA int, b unsafe.Pointer, ldb, strideB int, beta float32, c unsafe.Pointer, ldc, strideC, batch int) error {
	d.add(func(c *Counts) { c.Gemms++ })
	return d.Driver.SgemmStridedBatched(transA, transB, m, n, k, alpha, a, lda, strideA, b, ldb, strideB, beta, c, ldc, strideC, batch)
}

func (d *counted) Sync() error {
	d.add(func(c *Counts) { c.Syncs++ })
	defer d.waited(time.Now())
	return d.Driver.Sync()
}

// waited adds the time since t0 to the host's waiting time.
func (d *counted) waited(t0 time.Time) {
	w := time.Since(t0)
	d.mu.Lock()
	d.wait += w
	d.mu.Unlock()
}

// waitTime is the host time spent waiting for the device so far (CopyDtoH, Sync).
func (d *counted) waitTime() time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.wait
}
