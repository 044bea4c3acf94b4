package cuda

import "unsafe"

// The deterministic multi-block sum of a device vector of doubles: levels of
// k_sum_chunks, each summing chunks of sumChunk values in order with one thread per
// chunk (⌈n/sumChunk⌉ threads, over as many blocks as that takes), until one value is
// left. The order of the additions depends only on n, so the result is the same on
// every device and every run; no thread sums more than sumChunk values.

// sumChunk is the number of values one thread of a k_sum_chunks level sums.
const sumChunk = 256

// sumTreeLen is the number of doubles sumTree needs for n > 0 values: the n inputs,
// then each level's partial sums; the last one is the total.
func sumTreeLen(n int) int {
	total := n
	for n > 1 {
		n = (n + sumChunk - 1) / sumChunk
		total += n
	}
	return total
}

// sumTree queues the sum of the n > 0 doubles at buf (device memory of
// sumTreeLen(n) doubles, the inputs first) and returns the address of the total
// (buf itself when n = 1); it does not wait. Nil after an error (b.err).
func (b *Backend) sumTree(n int, buf unsafe.Pointer) unsafe.Pointer {
	in := buf
	for n > 1 {
		rows := (n + sumChunk - 1) / sumChunk
		out := unsafe.Add(in, 8*n)
		if !b.launchRaw("k_sum_chunks", min(maxGrid, (rows+reduceBlock-1)/reduceBlock), Args(n, sumChunk, in, out)) {
			return nil
		}
		in, n = out, rows
	}
	return in
}
