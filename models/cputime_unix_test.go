//go:build unix

package models

import (
	"syscall"
	"time"
)

// processCPUTime is the user+system CPU time of this process so far (all threads),
// 0 when it cannot be read.
func processCPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
