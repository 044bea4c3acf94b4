package sweep

import "github.com/dpfil/dpfil/internal/dirlock"

// LockDir takes an exclusive advisory lock on dir/.lock so that two sweep processes
// never work in one directory at once (they would both train the same pending runs
// in the same run directories). The lock dies with the process, so a killed sweep
// never leaves a stale lock behind. The error wraps dirlock.ErrLocked when another
// process holds it.
func LockDir(dir string) (unlock func(), err error) {
	return dirlock.LockAs(dir, "sweep directory",
		"another sweep process is running in "+dir+" (one process per directory; use --shard with a directory per shard)")
}
