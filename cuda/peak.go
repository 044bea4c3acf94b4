package cuda

// fp32LanesPerSM is the number of FP32 FMA units per streaming multiprocessor of a
// GPU of compute capability major.minor (non-tensor-core), or 0 when the
// architecture is not in the table: Turing 7.5 and GA100 8.0 have 64, the consumer
// and embedded Ampere/Ada parts (8.6, 8.7, 8.9), Hopper 9.0 and Blackwell (10.x,
// 12.x) 128.
func fp32LanesPerSM(major, minor int) int {
	switch {
	case major == 7 && minor == 5, major == 8 && minor == 0:
		return 64
	case major == 8 && (minor == 6 || minor == 7 || minor == 9), major == 9 && minor == 0:
		return 128
	case major == 10 || major == 12:
		return 128
	}
	return 0
}

// peakFP32GFLOPs is a GPU's peak FP32 rate in GFLOP/s: every FP32 lane of every SM
// retiring one FMA (2 FLOPs) a cycle at the maximum clock (clockKHz, as
// CU_DEVICE_ATTRIBUTE_CLOCK_RATE reports it). It is 0 (unknown) for an architecture
// outside fp32LanesPerSM's table or a non-positive SM count or clock.
func peakFP32GFLOPs(sms, clockKHz, major, minor int) float64 {
	lanes := fp32LanesPerSM(major, minor)
	if sms <= 0 || clockKHz <= 0 || lanes == 0 {
		return 0
	}
	return float64(sms) * float64(lanes) * 2 * float64(clockKHz) * 1e3 / 1e9
}
