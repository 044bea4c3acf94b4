//go:build !unix

package enginebench

import "time"

// processCPUTime is not available on this platform; CPU-time rates are then 0.
func processCPUTime() time.Duration { return 0 }
