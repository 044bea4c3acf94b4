//go:build unix

package dirlock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// Lock creates dir if needed and takes its lock, or fails at once with an error
// wrapping ErrLocked when another process holds it. unlock removes DIR/.lock, then
// the directories Lock created that are empty by then (a run that wrote nothing
// leaves no folder behind; a folder that existed before, or holds anything, is
// kept), and releases the lock.
func Lock(dir string) (unlock func(), err error) {
	created, err := mkdirAll(dir)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, lockFile)
	// A holder that unlocks removes the file while still holding it, so a lock taken
	// on a file that is no longer at path is stale: open path again.
	for attempt := 0; ; attempt++ {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if errors.Is(err, os.ErrNotExist) && attempt < maxAttempts {
			// The holder removed dir as it unlocked: create it again.
			c, err := mkdirAll(dir)
			if err != nil {
				return nil, err
			}
			created = append(created, c...)
			continue
		}
		if err != nil {
			removeEmpty(created)
			return nil, fmt.Errorf("lock %s: %w", dir, err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			removeEmpty(created)
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return nil, fmt.Errorf("%s: %w", dir, ErrLocked)
			}
			return nil, fmt.Errorf("lock %s: %w", dir, err)
		}
		if !samePath(f, path) && attempt < maxAttempts {
			syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
			f.Close()
			continue
		}
		return func() {
			_ = os.Remove(path) // under the lock: the next holder opens a new file
			removeEmpty(created)
			syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
			f.Close()
		}, nil
	}
}

// samePath reports whether the open file f is still the file at path.
func samePath(f *os.File, path string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Stat(path)
	return err == nil && os.SameFile(a, b)
}

// LockOpenFile takes an exclusive advisory lock on the open file f, or fails at once
// with an error wrapping ErrLocked when another open of the file (in this process or
// another) holds it. The lock is released when f is closed or its process dies.
func LockOpenFile(f *os.File) error {
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return fmt.Errorf("%s: %w", f.Name(), ErrLocked)
		}
		return fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	return nil
}
