package sweep

import (
	"errors"
	"fmt"

	"github.com/dpfil/dpfil/internal/dirlock"
)

// LockDir takes an exclusive advisory lock on dir/.lock so that two sweep processes
// never work in one directory at once (they would both train the same pending runs
// in the same run directories). The lock dies with the process, so a killed sweep
// never leaves a stale lock behind. The error wraps dirlock.ErrLocked when another
// process holds it.
func LockDir(dir string) (unlock func(), err error) {
	unlock, err = dirlock.Lock(dir)
	if errors.Is(err, dirlock.ErrLocked) {
		return nil, fmt.Errorf("another sweep process is running in %s (one process per directory; use --shard with a directory per shard): %w", dir, dirlock.ErrLocked)
	}
	if err != nil {
		return nil, fmt.Errorf("sweep directory: %w", err)
	}
	return unlock, nil
}
