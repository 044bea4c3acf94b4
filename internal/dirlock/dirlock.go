// Package dirlock gives one process at a time a directory: an exclusive advisory
// lock on DIR/.lock that dies with the process, so a killed run never leaves a stale
// lock behind. Unlocking removes the lock file and any directory the lock created
// that is still empty, so a run that fails before writing anything leaves nothing.
// LockOpenFile gives one open of a file (a checkpoint outside any run directory) the
// same kind of lock.
package dirlock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ErrLocked is returned (wrapped) when another process holds the directory.
var ErrLocked = errors.New("directory is in use by another process")

// lockFile is the name of the lock file inside the directory.
const lockFile = ".lock"

// maxAttempts bounds the retries when the lock file changes under Lock.
const maxAttempts = 100

// mkdirAll creates dir and its missing parents and returns the directories it
// created, deepest first.
func mkdirAll(dir string) ([]string, error) {
	var missing []string
	for d := filepath.Clean(dir); ; {
		if _, err := os.Stat(d); err == nil {
			break
		} else if !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("create %s: %w", dir, err)
		}
		missing = append(missing, d)
		parent := filepath.Dir(d)
		if parent == d {
			break
		}
		d = parent
	}
	// Another process's unlock may remove a parent it created (empty) while
	// MkdirAll runs: its Mkdir then fails with "not exist" (the parent went away)
	// or "file exists" (a sibling created it and removed it again before MkdirAll
	// could see it as a directory). Try again; a file in the way fails every time.
	var err error
	for range maxAttempts {
		if err = os.MkdirAll(dir, 0o755); !errors.Is(err, os.ErrNotExist) && !errors.Is(err, os.ErrExist) {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", dir, err)
	}
	return missing, nil
}

// removeEmpty removes the directories of created (deepest first) that are empty,
// stopping at the first that is not: os.Remove never removes a directory with
// content.
func removeEmpty(created []string) {
	for _, d := range created {
		if os.Remove(d) != nil {
			return
		}
	}
}

// LockAs is Lock with its errors worded for the caller: busy (which should name dir
// and say why one process at a time) when another process holds dir, wrapping
// ErrLocked; what, then the cause, for any other failure.
func LockAs(dir, what, busy string) (unlock func(), err error) {
	unlock, err = Lock(dir)
	if errors.Is(err, ErrLocked) {
		return nil, fmt.Errorf("%s: %w", busy, ErrLocked)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return unlock, nil
}
