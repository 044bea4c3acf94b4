//go:build !unix

package models

import "time"

// processCPUTime is not available on this platform: CPU-time metrics are then 0.
func processCPUTime() time.Duration { return 0 }
