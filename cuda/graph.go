package cuda

import (
	"errors"
	"fmt"
	"unsafe"
)

// CUDA graphs for the device-resident step. A backend call of the network (the
// clipped-gradient sum of a batch, the FIL values of its members) issues the same
// driver calls every time its shapes are the same: only the bytes it copies to the
// device (batch indices, labels, FIL coordinates) and the results it copies back
// differ. graphed captures such a call once into a graph — its copies to the device
// read page-locked slots, its result lands in a page-locked slot — and replays it:
// the network's host code runs as usual, but the work it would queue is only checked
// against the capture (same kernel, same sizes, in the same order), the bytes it
// would copy to the device are written into their slots, and at the call's one copy
// to the host the graph is launched (one driver call), waited for and the result
// copied out of its slot. Kernel arguments are part of the graph, so the key of a
// graph (Model) holds every scalar that reaches a kernel.

// graphMode is what graphed does with the work it is given.
type graphMode int

const (
	graphDirect  graphMode = iota // pass everything to the driver
	graphCapture                  // pass it on while the driver captures; copies through slots
	graphReplay                   // check it against the capture, write the slots, launch at the end
)

// graphOp is one recorded operation of a capture: its kind, sizes and scalar
// arguments, checked at replay. Device addresses are left out: a later call may use
// reallocated buffers where the graph keeps using the ones it captured, which stay
// allocated; a scalar that differs (one a graph's key left out) is an error, not a
// stale value silently replayed.
type graphOp struct {
	kind string // kernel name, "gemm", "memset", "dtod", "htod", "dtoh"
	n    int    // elements, bytes or GEMM batch
	dims [4]int
	args string // the kernel's or GEMM's scalar arguments
}

// pinSlot is page-locked host memory that a graph's copy reads or writes.
type pinSlot struct {
	p unsafe.Pointer
	n int
}

// stepGraph is one captured backend call.
type stepGraph struct {
	g     Graph
	ops   []graphOp
	ins   []pinSlot // copies to the device, in order
	out   pinSlot   // the result copied to the host (the call's last operation)
	valid bool      // captured completely
}

// graphed is the Driver a backend issues its work to: counted's, plus capture and
// replay of one call at a time (cur).
type graphed struct {
	*counted
	// isDev reports whether an argument slot holds an address of device memory
	// (the backend's allocations; b.mu held).
	isDev func(v uint64) bool
	cache graphCache
	mode  graphMode
	cur   *stepGraph
	pos   int // replay: operations checked so far
	nin   int // replay: slots written so far
}

var errGraphMismatch = errors.New("the call's work differs from its captured graph")

// record checks (replay) or records (capture) one queued operation; it reports
// whether the driver must be called.
func (d *graphed) record(op graphOp) (bool, error) {
	switch d.mode {
	case graphCapture:
		d.cur.ops = append(d.cur.ops, op)
		return true, nil
	case graphReplay:
		if d.pos >= len(d.cur.ops) || d.cur.ops[d.pos] != op {
			return false, fmt.Errorf("cuda graph: operation %d (%s, %d, scalars %s): %w", d.pos, op.kind, op.n, op.args, errGraphMismatch)
		}
		d.pos++
		return false, nil
	}
	return true, nil
}

// scalars formats the argument slots that are not device addresses.
func (d *graphed) scalars(args []uint64) string {
	out := make([]byte, 0, 8*len(args))
	for _, v := range args {
		if d.isDev != nil && v != 0 && d.isDev(v) {
			v = 0
		}
		out = fmt.Appendf(out, "%x,", v)
	}
	return string(out)
}

func (d *graphed) Launch(name string, grid, block Dim3, args []uint64) error {
	op := graphOp{kind: name, n: len(args), dims: [4]int{int(grid.X), int(block.X)}}
	if d.mode != graphDirect {
		op.args = d.scalars(args)
	}
	if ok, err := d.record(op); !ok {
		return err
	}
	return d.counted.Launch(name, grid, block, args)
}

func (d *graphed) Sgemm(transA, transB bool, m, n, k int, alpha float32, a unsafe.Pointer, lda int, b unsafe.Pointer, ldb int, beta float32, c unsafe.Pointer, ldc int) error {
	if ok, err := d.record(graphOp{kind: "gemm", n: 1, dims: [4]int{m, n, k, lda},
		args: fmt.Sprint(transA, transB, alpha, ldb, beta, ldc)}); !ok {
		return err
	}
	return d.counted.Sgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

func (d *graphed) SgemmStridedBatched(transA, transB bool, m, n, k int, alpha float32, a unsafe.Pointer, lda, strideA int, b unsafe.Pointer, ldb, strideB int, beta float32, c unsafe.Pointer, ldc, strideC, batch int) error {
	if ok, err := d.record(graphOp{kind: "gemm", n: batch, dims: [4]int{m, n, k, lda},
		args: fmt.Sprint(transA, transB, alpha, ldb, beta, ldc, strideA, strideB, strideC)}); !ok {
		return err
	}
	return d.counted.SgemmStridedBatched(transA, transB, m, n, k, alpha, a, lda, strideA, b, ldb, strideB, beta, c, ldc, strideC, batch)
}

func (d *graphed) MemsetZero(p unsafe.Pointer, n int) error {
	if ok, err := d.record(graphOp{kind: "memset", n: n}); !ok {
		return err
	}
	return d.counted.MemsetZero(p, n)
}

func (d *graphed) CopyDtoD(dst, src unsafe.Pointer, n int) error {
	if ok, err := d.record(graphOp{kind: "dtod", n: n}); !ok {
		return err
	}
	return d.counted.CopyDtoD(dst, src, n)
}

// CopyHtoD goes through a page-locked slot while capturing (the graph reads the slot
// each time it runs); at replay it only writes the slot.
func (d *graphed) CopyHtoD(dst, src unsafe.Pointer, n int) error {
	switch d.mode {
	case graphCapture:
		d.cur.ops = append(d.cur.ops, graphOp{kind: "htod", n: n})
		p, err := d.counted.AllocHost(n)
		if err != nil {
			return fmt.Errorf("cuda graph: page-locked slot of %d bytes: %w", n, err)
		}
		d.cur.ins = append(d.cur.ins, pinSlot{p, n})
		copy(unsafe.Slice((*byte)(p), n), unsafe.Slice((*byte)(src), n))
		return d.counted.CopyHtoDPinned(dst, p, n)
	case graphReplay:
		if _, err := d.record(graphOp{kind: "htod", n: n}); err != nil {
			return err
		}
		s := d.cur.ins[d.nin]
		d.nin++
		copy(unsafe.Slice((*byte)(s.p), n), unsafe.Slice((*byte)(src), n))
		return nil
	}
	return d.counted.CopyHtoD(dst, src, n)
}

// CopyDtoH ends a capture or a replay: the result is copied into its slot by the
// graph, which is then launched and waited for.
func (d *graphed) CopyDtoH(dst, src unsafe.Pointer, n int) error {
	switch d.mode {
	case graphCapture:
		g := d.cur
		d.mode = graphDirect
		g.ops = append(g.ops, graphOp{kind: "dtoh", n: n})
		p, err := d.counted.AllocHost(n)
		if err != nil {
			_, _ = d.counted.EndCapture()
			return fmt.Errorf("cuda graph: page-locked slot of %d bytes: %w", n, err)
		}
		g.out = pinSlot{p, n}
		err = d.counted.CopyDtoHAsync(p, src, n)
		h, cerr := d.counted.EndCapture()
		if err = errors.Join(err, cerr); err != nil {
			return fmt.Errorf("cuda graph: capture: %w", err)
		}
		g.g, g.valid = h, true
		return d.finish(g, dst, n)
	case graphReplay:
		g := d.cur
		_, err := d.record(graphOp{kind: "dtoh", n: n})
		d.mode = graphDirect
		if err != nil {
			return err
		}
		if d.pos != len(g.ops) || d.nin != len(g.ins) {
			return fmt.Errorf("cuda graph: the call ended after %d of %d operations: %w", d.pos, len(g.ops), errGraphMismatch)
		}
		return d.finish(g, dst, n)
	}
	return d.counted.CopyDtoH(dst, src, n)
}

// finish launches g, waits for it and copies its result out.
func (d *graphed) finish(g *stepGraph, dst unsafe.Pointer, n int) error {
	if err := d.counted.LaunchGraph(g.g); err != nil {
		return fmt.Errorf("cuda graph: launch: %w", err)
	}
	if err := d.counted.Sync(); err != nil {
		return fmt.Errorf("cuda graph: synchronize: %w", err)
	}
	copy(unsafe.Slice((*byte)(dst), n), unsafe.Slice((*byte)(g.out.p), n))
	return nil
}

// Sync may not be captured or replayed (a backend call that waits twice is not
// graphed).
func (d *graphed) Sync() error {
	if d.mode != graphDirect {
		d.mode = graphDirect
		return fmt.Errorf("cuda graph: a synchronisation inside a graphed call")
	}
	return d.counted.Sync()
}

// begin starts capturing (g new) or replaying g for the next backend call.
func (d *graphed) begin(g *stepGraph) error {
	d.cur, d.pos, d.nin = g, 0, 0
	if g.valid {
		d.mode = graphReplay
		return nil
	}
	if err := d.counted.BeginCapture(); err != nil {
		return fmt.Errorf("cuda graph: begin capture: %w", err)
	}
	d.mode = graphCapture
	return nil
}

// abort ends a capture or replay that did not reach its copy to the host.
func (d *graphed) abort() {
	if d.mode == graphCapture {
		_, _ = d.counted.EndCapture()
	}
	d.mode = graphDirect
}

// free releases g's graph and slots.
func (d *graphed) free(g *stepGraph) error {
	var errs []error
	if g.valid {
		errs = append(errs, d.counted.DestroyGraph(g.g))
	}
	for _, s := range append(g.ins, g.out) {
		if s.p != nil {
			errs = append(errs, d.counted.FreeHost(s.p))
		}
	}
	g.valid, g.ins, g.out = false, nil, pinSlot{}
	return errors.Join(errs...)
}

// maxGraphs bounds the graphs a backend keeps: Poisson sampling gives a new batch
// size most steps, and each size is its own graph (the oldest is released).
const maxGraphs = 16

// graphCache holds a backend's captured calls by key.
type graphCache struct {
	off   bool // graphs disabled (SetGraphs)
	byKey map[string]*stepGraph
	seen  map[string]int // calls run so far per key
	order []string       // keys, oldest first
}

// graphFor returns the graph to capture or replay for a call with this key, or nil
// to run the call directly: the first call of a key runs directly (it allocates the
// call's buffers, which a graph must not do), the second is captured, later ones
// replay it.
func (d *graphed) graphFor(key string) *stepGraph {
	c := &d.cache
	if c.off {
		return nil
	}
	if g := c.byKey[key]; g != nil {
		return g
	}
	if c.seen == nil {
		c.seen, c.byKey = map[string]int{}, map[string]*stepGraph{}
	}
	c.seen[key]++
	if c.seen[key] < 2 {
		return nil
	}
	if len(c.order) >= maxGraphs {
		old := c.order[0]
		c.order = c.order[1:]
		_ = d.free(c.byKey[old])
		delete(c.byKey, old)
	}
	g := &stepGraph{}
	c.byKey[key] = g
	c.order = append(c.order, key)
	return g
}

// drop releases the graph of key (a failed capture or replay).
func (d *graphed) drop(key string) error {
	c := &d.cache
	g := c.byKey[key]
	if g == nil {
		return nil
	}
	delete(c.byKey, key)
	for i, k := range c.order {
		if k == key {
			c.order = append(c.order[:i], c.order[i+1:]...)
			break
		}
	}
	return d.free(g)
}

// releaseAll releases every graph (Backend.Close).
func (d *graphed) releaseAll() error {
	var errs []error
	for _, k := range append([]string(nil), d.cache.order...) {
		errs = append(errs, d.drop(k))
	}
	return errors.Join(errs...)
}

// graphCall runs f, a backend call of the network that ends with one copy to the
// host, as the graph of key (see graphFor): captured or replayed when there is one.
func (b *Backend) graphCall(key string, f func() error) error {
	b.mu.Lock()
	if !b.plain || b.err != nil {
		b.mu.Unlock()
		return f()
	}
	g := b.gd.graphFor(key)
	if g == nil {
		b.mu.Unlock()
		return f()
	}
	if err := b.gd.begin(g); err != nil {
		_ = b.gd.drop(key)
		b.mu.Unlock()
		return f()
	}
	b.mu.Unlock()
	err := f()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.graphing() {
		b.gd.abort()
		if err == nil {
			err = fmt.Errorf("cuda graph %s: the call ended without its copy to the host", key)
			b.fail(err)
		}
	}
	if err != nil || !g.valid {
		_ = b.gd.drop(key)
	}
	return err
}

// SetGraphs turns the capture and replay of the device-resident step's calls on
// (the default) or off; off releases the graphs.
func (m *Model) SetGraphs(on bool) error {
	b := m.be
	b.mu.Lock()
	defer b.mu.Unlock()
	b.gd.cache.off = !on
	if !on {
		return b.gd.releaseAll()
	}
	return nil
}
