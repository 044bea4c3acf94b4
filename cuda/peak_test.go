package cuda

import (
	"math"
	"testing"
)

func TestFP32LanesPerSM(t *testing.T) {
	for _, tc := range []struct {
		major, minor, want int
	}{
		{7, 5, 64}, // Turing
		{8, 0, 64}, // A100
		{8, 6, 128},
		{8, 7, 128},
		{8, 9, 128}, // Ada
		{9, 0, 128}, // Hopper
		{10, 0, 128},
		{10, 3, 128},
		{12, 0, 128},
		{12, 1, 128},
		{7, 0, 0}, // Volta: below the PTX target, not in the table
		{8, 1, 0},
		{8, 8, 0},
		{9, 1, 0},
		{11, 0, 0},
		{6, 1, 0},
		{0, 0, 0},
		{-1, 5, 0},
	} {
		if got := fp32LanesPerSM(tc.major, tc.minor); got != tc.want {
			t.Errorf("fp32LanesPerSM(%d, %d) = %d, want %d", tc.major, tc.minor, got, tc.want)
		}
	}
}

func TestPeakFP32GFLOPs(t *testing.T) {
	for _, tc := range []struct {
		name                        string
		sms, clockKHz, major, minor int
		want                        float64
	}{
		// Published FP32 peaks (non-tensor): H100 SXM 66.9 TFLOP/s at 1980 MHz boost,
		// A100 19.5 TFLOP/s at 1410 MHz, T4 8.1 TFLOP/s at 1590 MHz, RTX 4090 82.6
		// TFLOP/s at 2520 MHz.
		{"H100 SXM", 132, 1980000, 9, 0, 132 * 128 * 2 * 1.98},
		{"A100", 108, 1410000, 8, 0, 108 * 64 * 2 * 1.41},
		{"T4", 40, 1590000, 7, 5, 40 * 64 * 2 * 1.59},
		{"RTX 4090", 128, 2520000, 8, 9, 128 * 128 * 2 * 2.52},
		{"unknown arch", 80, 1530000, 7, 0, 0},
		{"no SMs", 0, 1980000, 9, 0, 0},
		{"no clock", 132, 0, 9, 0, 0},
		{"negative clock", 132, -1, 9, 0, 0},
	} {
		got := peakFP32GFLOPs(tc.sms, tc.clockKHz, tc.major, tc.minor)
		if math.Abs(got-tc.want) > 1e-9*max(1, tc.want) {
			t.Errorf("%s: peakFP32GFLOPs(%d, %d, %d, %d) = %g, want %g", tc.name, tc.sms, tc.clockKHz, tc.major, tc.minor, got, tc.want)
		}
	}
	// The published figures, to 1%.
	for _, tc := range []struct {
		got, tflops float64
	}{
		{peakFP32GFLOPs(132, 1980000, 9, 0), 66.9},
		{peakFP32GFLOPs(108, 1410000, 8, 0), 19.5},
		{peakFP32GFLOPs(40, 1590000, 7, 5), 8.1},
		{peakFP32GFLOPs(128, 2520000, 8, 9), 82.6},
	} {
		if math.Abs(tc.got/1e3-tc.tflops) > 0.01*tc.tflops {
			t.Errorf("peak %g GFLOP/s, published %g TFLOP/s", tc.got, tc.tflops)
		}
	}
}
