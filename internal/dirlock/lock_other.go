//go:build !unix

package dirlock

import "os"

// Lock only creates dir where advisory file locks are not available: running two
// processes in one directory is then the user's responsibility. unlock removes the
// directories Lock created that are empty by then.
func Lock(dir string) (unlock func(), err error) {
	created, err := mkdirAll(dir)
	if err != nil {
		return nil, err
	}
	return func() { removeEmpty(created) }, nil
}

// LockOpenFile does nothing where advisory file locks are not available.
func LockOpenFile(f *os.File) error { return nil }
