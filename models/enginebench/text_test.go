package enginebench

import (
	"bytes"
	"strings"
	"testing"
)

// TestDeviceText checks the device lines of the summary: the transfer counts of both
// calls first, then their device-event timings, each only when measured.
func TestDeviceText(t *testing.T) {
	d := &DeviceReport{Device: "cuda", Name: "emu", Resident: true,
		GradCounts: &DeviceCounts{HtoDBytes: 1, DtoHBytes: 2, Syncs: 3, Launches: 4, Gemms: 5},
		FILCounts:  &DeviceCounts{HtoDBytes: 6},
		GradTiming: &DeviceTiming{Calls: 7, WallS: 0.002, HostIssS: 0.001, HostWait: 0.0005, DeviceS: 0.0015}}
	var buf bytes.Buffer
	d.writeText(&buf, 4)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	want := []string{
		"  per gradient sum  1 bytes to the device, 2 to the host, 3 syncs, 4 launches, 5 GEMMs (inputs resident: true)",
		"  per FIL step      6 bytes to the device, 0 to the host, 0 syncs, 0 launches, 0 GEMMs (inputs resident: true)",
		"  per gradient sum  2.000 ms wall = 1.000 ms host issue + 0.500 ms host wait; 1.500 ms device time (events; 7 warm calls)",
	}
	if len(lines) != 3+len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), 3+len(want), buf.String())
	}
	for i, w := range want {
		if lines[3+i] != w {
			t.Errorf("line %d:\n got %q\nwant %q", 3+i, lines[3+i], w)
		}
	}
}
