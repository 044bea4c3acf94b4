//go:build unix

package enginebench

import (
	"syscall"
	"time"
)

// processCPUTime is the user+system CPU time this process has used so far (all
// threads), or 0 when it cannot be read.
func processCPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
