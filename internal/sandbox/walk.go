package sandbox

import "golang.org/x/sys/unix"

// The daemon's side of isolation (package setup) prepares host paths that
// a job's user can write with the same link-refusing walk as the helper.

// OpenSource opens path as an O_PATH descriptor without following a link
// the job's user could have planted (see openSource). The caller closes it.
func OpenSource(path string) (int, error) { return openSource(path) }

// OpenCreating is OpenSource creating each missing directory on the way
// (see openCreating). The caller closes the descriptor.
func OpenCreating(path string) (int, error) { return openCreating(path) }

// FDPath names the file open as fd, whose stat is byFD, for a call that
// takes a path (see fdPath).
func FDPath(fd int, byFD *unix.Stat_t) (string, error) { return fdPath(fd, byFD) }
