package cuda

import (
	"fmt"
	"slices"
	"unsafe"

	"github.com/dpfil/dpfil/internal/pcgjump"
	"github.com/dpfil/dpfil/models"
)

// FIL coordinates drawn on the device. train draws each FIL member's k coordinates
// as IntN(d) from a per-run math/rand/v2 PCG; a device-resident step draws the same
// values on the device instead of uploading 4·B·k bytes of coordinates and 4·B·k of
// their one-hot values: the host uploads the PCG's 16-byte state, k_draw_coords
// computes every draw from it in parallel (a jump ahead per segment, Lemire's
// multiply), and k_draw_coords_fix — always queued, so the pair stays one captured
// graph — redraws the sequence on one thread with IntN's rejection loop when a draw
// might have been rejected (probability < d/2⁶⁴ each), and writes how many PCG
// outputs the draws consumed, which the host reads back with the update's count and
// skips on its own PCG (pcgjump.Advance). internal/pcgjump is the Go reference.

// Backend draws the FIL coordinates of a call when armed (DrawOneHot).
var _ models.OneHotDrawer[float32] = (*Backend)(nil)

// drawSegments is the number of threads k_draw_coords draws with: each jumps once and
// steps through ⌈rows/drawSegments⌉ draws, and k_draw_coords_fix reads one flag per
// segment.
const drawSegments = 512

// coordDraw is a backend's state for drawing the coordinates of one call.
type coordDraw struct {
	armed, done bool
	n           int64 // IntN's n (the input dimension)
	rows        int   // samples · directions of the call
	batch, k    int
	state       *[2]int64      // the PCG state: high, low 64 bits (host copy, uploaded; its own allocation, for cgo)
	stDev       unsafe.Pointer // its device copy (2 long long)
	flags       unsafe.Pointer // drawSegments ints
	idx         unsafe.Pointer // the drawn coordinates (rows int32), grown
	idxCap      int
	table       []float32      // device: OneHotValues (nil: coordinates only)
	used        unsafe.Pointer // device double: PCG outputs consumed (k_draw_coords_fix)
	host        []int          // the engine's host index slice that stands for idx
}

// alias returns the device address of the drawn coordinates that the host slice idx
// stands for (a piece of the pass's index slice), when a draw of the current call
// is active.
func (d *coordDraw) alias(idx []int) (unsafe.Pointer, bool) {
	if !d.done || len(idx) == 0 || len(d.host) == 0 {
		return nil, false
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(d.host)))
	p := uintptr(unsafe.Pointer(unsafe.SliceData(idx)))
	const w = unsafe.Sizeof(int(0))
	if p < base || (p-base)%w != 0 {
		return nil, false
	}
	off := int((p - base) / w)
	if off+len(idx) > len(d.host) {
		return nil, false
	}
	return unsafe.Add(d.idx, 4*off), true
}

// armDraw prepares the next FIL call of batch samples with k coordinates each to
// draw them on the device: IntN(n) from the PCG state s, one-hot values from table
// (device memory, n values), the consumed count to used (device memory, one
// double). The scratch is allocated here, outside any graph.
func (b *Backend) armDraw(s pcgjump.U128, n int64, batch, k int, table []float32, used unsafe.Pointer) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err != nil {
		return b.err
	}
	if !b.plain {
		return fmt.Errorf("cuda: device-drawn FIL coordinates need plain device memory")
	}
	d := &b.draw
	rows := batch * k
	if n <= 0 || rows <= 0 || len(table) < int(n) {
		return fmt.Errorf("cuda: draw %d·%d coordinates below %d with a table of %d values", batch, k, n, len(table))
	}
	if d.stDev == nil {
		if d.stDev = b.allocBytes(16); d.stDev == nil {
			return b.err
		}
		if d.flags = b.allocBytes(4 * drawSegments); d.flags == nil {
			return b.err
		}
	}
	if d.idxCap < rows {
		if d.idx = b.allocBytes(4 * rows); d.idx == nil {
			return b.err
		}
		d.idxCap = rows
	}
	d.armed, d.done = true, false
	d.n, d.rows, d.batch, d.k = n, rows, batch, k
	if d.state == nil {
		d.state = new([2]int64)
	}
	*d.state = [2]int64{int64(s.Hi), int64(s.Lo)}
	d.table, d.used, d.host = table, used, nil
	return nil
}

// disarmDraw ends the call armDraw prepared; it reports whether the call drew.
func (b *Backend) disarmDraw() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	done := b.draw.done
	b.draw.armed, b.draw.done, b.draw.host, b.draw.table = false, false, nil, nil
	return done
}

// DrawOneHot is models.OneHotDrawer: in a call armed by armDraw, it queues the
// upload of the PCG state and the draw of the whole call's coordinates (the pass
// must be the whole call) into the device scratch that spIdx then stands for, with
// their one-hot values into spVal. Unarmed it reports false.
func (b *Backend) DrawOneHot(spIdx []int, spVal []float32, s0, cs, j0, kc int) bool {
	b.mu.Lock()
	armed := b.draw.armed
	b.mu.Unlock()
	if !armed {
		return false
	}
	if !b.begin() {
		return true
	}
	defer b.end()
	d := &b.draw
	rows := cs * kc
	if d.done || s0 != 0 || j0 != 0 || cs != d.batch || kc != d.k || len(spIdx) != rows || len(spVal) != rows {
		b.fail(fmt.Errorf("cuda: device-drawn FIL coordinates need the call as one pass of %d samples × %d directions, got samples %d+%d, directions %d+%d",
			d.batch, d.k, s0, cs, j0, kc))
		return true
	}
	if !b.copyIn(d.stDev, unsafe.Pointer(&d.state[0]), 16) {
		return true
	}
	val := b.dev(spVal, true)
	table := b.dev(d.table, false)
	b.launch("k_draw_coords", drawSegments, rows, drawSegments, d.n, d.stDev, table, d.idx, unsafe.Pointer(nil), val, d.flags)
	b.launch("k_draw_coords_fix", 1, rows, drawSegments, d.n, d.stDev, table, d.idx, unsafe.Pointer(nil), val, d.flags, d.used)
	d.host, d.done = spIdx, true
	return true
}

// ResidentFILDrawn is ResidentFIL with the coordinates drawn on the device: k draws of
// IntN(d) per member, members in order, from the math/rand/v2 PCG whose
// MarshalBinary form is pcg — the values train's filStep draws on the host — so only
// the PCG's 16-byte state goes to the device. d must be the input dimension. It
// reports false, having done nothing, when the device cannot draw for this call (the
// engine would run it as more than one pass): the caller then draws on the host and
// calls ResidentFIL. After a draw the caller's PCG is behind the device's: the next
// ResidentUpdate reads back how many outputs the draw consumed (ResidentCoordsUsed),
// which the caller skips (pcgjump.Advance).
func (m *Model) ResidentFILDrawn(idx, y []int, clip models.Clip, k, d int, pcg []byte, out []float64) (bool, error) {
	r, err := m.resident()
	if err != nil {
		return false, err
	}
	if d != r.D || k <= 0 {
		return false, fmt.Errorf("cuda: device-drawn FIL coordinates: %d draws below %d for an input of %d values", k, d, r.D)
	}
	for _, i := range idx {
		if i < 0 || i >= r.nTrain {
			return false, fmt.Errorf("cuda: FIL index %d outside [0,%d)", i, r.nTrain)
		}
	}
	if r.drawPending {
		return false, fmt.Errorf("cuda: device-drawn FIL coordinates: the last draw's count was not read back by an update")
	}
	if len(idx) == 0 || !m.net.FILOnePass(len(idx), k) {
		return false, nil
	}
	s, err := pcgjump.ParseBinary(pcg)
	if err != nil {
		return false, fmt.Errorf("cuda: device-drawn FIL coordinates: %w", err)
	}
	table, err := m.oneHotTable(r)
	if err != nil {
		return false, err
	}
	if table == nil {
		return false, nil
	}
	coords := r.stubCoords(len(idx), k)
	b := m.be
	if err := b.armDraw(s, int64(d), len(idx), k, table, unsafe.Pointer(&r.bad[len(r.bad)-1])); err != nil {
		return false, fmt.Errorf("cuda: device-drawn FIL coordinates: %w", err)
	}
	err = m.residentFIL(r, "drawn-", idx, y, clip, coords, k, out)
	drew := b.disarmDraw()
	if err != nil {
		return false, err
	}
	if !drew {
		return false, fmt.Errorf("cuda: device-drawn FIL coordinates: the engine ran the FIL call without asking for its one-hot seeds")
	}
	r.drawPending = true
	return true, nil
}

// ResidentCoordsUsed returns how many PCG outputs the last ResidentFILDrawn consumed
// (the number of draws, more when IntN rejected one), as the ResidentUpdate after it
// read back; an error when no update has read a draw's count since.
func (m *Model) ResidentCoordsUsed() (uint64, error) {
	r, err := m.resident()
	if err != nil {
		return 0, err
	}
	if !r.usedReady {
		return 0, fmt.Errorf("cuda: no device-drawn FIL coordinates were read back by an update")
	}
	r.usedReady = false
	return r.coordsUsed, nil
}

// oneHotTable returns the device copy of the network's OneHotValues (nil when FIL
// directions are not one-hot at its first parameter layer), uploaded again only when
// they change (SetFILNormalizedInputs).
func (m *Model) oneHotTable(r *resident) ([]float32, error) {
	v := m.net.OneHotValues()
	if v == nil {
		return nil, nil
	}
	if r.oneHot == nil || !slices.Equal(v, r.oneHotHost) {
		if r.oneHot == nil {
			r.oneHot = m.be.Alloc(len(v))
		}
		m.be.Copy(r.oneHot, v)
		r.oneHotHost = v
		if err := m.check("one-hot values", nil); err != nil {
			return nil, err
		}
	}
	return r.oneHot, nil
}

// stubCoords returns batch coordinate lists of k zeros: the shape of a call whose
// coordinates the device draws (the engine validates and sizes by them).
func (r *resident) stubCoords(batch, k int) [][]int {
	if len(r.stub) != batch || (batch > 0 && len(r.stub[0]) != k) {
		flat := make([]int, batch*k)
		r.stub = make([][]int, batch)
		for i := range r.stub {
			r.stub[i] = flat[i*k : (i+1)*k : (i+1)*k]
		}
	}
	return r.stub
}
