//go:build !unix

package dirlock

import (
	"fmt"
	"os"
)

// Lock only creates dir where advisory file locks are not available: running two
// processes in one directory is then the user's responsibility.
func Lock(dir string) (unlock func(), err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", dir, err)
	}
	return func() {}, nil
}
