// Package dirlock gives one process at a time a directory: an exclusive advisory
// lock on DIR/.lock that dies with the process, so a killed run never leaves a stale
// lock behind.
package dirlock

import "errors"

// ErrLocked is returned (wrapped) when another process holds the directory.
var ErrLocked = errors.New("directory is in use by another process")
