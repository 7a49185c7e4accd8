package monit

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/internal/pidfile"
	"github.com/vigil-bosh/vigil/internal/procstat"
)

// owner is whose processes a check process's signals may reach. Its pid
// file lies where the job can write (its run directory), so the pid it
// names proves nothing: vigil, which runs as root, would otherwise signal
// whatever a job wrote there (SECURITY.md). A process is the service's
// when it lies in the session of the start program vigil ran, or when the
// service's user could signal it itself (kill(2)'s rule: the user is root,
// or the process's real or saved uid) and so could whoever wrote the pid
// file: never another user's process, never root's for a service that
// does not run as root.
type owner struct {
	uid     uint32 // the start program's user (as uid), else the daemon's
	session int    // the session of the start program vigil ran (its pid), 0 for none
}

// ownerOf is the owner of a service's processes, before any start.
func ownerOf(r *ProgramRunner) owner {
	o := owner{uid: uint32(os.Getuid())}
	if p := r.Service.Start; p != nil && p.UID != "" {
		if uid, _, err := lookupUser(p.UID); err == nil {
			o.uid = uid
		}
	}
	return o
}

// ForeignError says that a pid file names a live process that its
// service cannot be shown to own: vigil never signals it.
type ForeignError struct {
	Path     string
	PID      int
	UID      uint32 // the process's real uid
	Service  uint32 // the service's user
	WriterID uint32 // the pid file's owner
}

func (e *ForeignError) Error() string {
	return fmt.Sprintf("pid file %s (owner uid %d) names pid %d, a process of uid %d: not the service's (uid %d) "+
		"nor started by its start program; not trusted, never signalled", e.Path, e.WriterID, e.PID, e.UID, e.Service)
}

// may reports whether a process with ids may be signalled for user uid:
// kill(2)'s own rule for an unprivileged sender, root may signal anyone.
func may(uid uint32, ids procstat.IDs) bool {
	return uid == 0 || uid == ids.Real || uid == ids.Saved
}

// check says whether pid, named by a pid file written by w at path, is the
// service's (nil) or foreign (a *ForeignError, or the error reading it).
func (o owner) check(path string, pid int, w pidfile.Writer) error {
	st, err := procstat.ReadStat(pid)
	if err != nil {
		return err
	}
	if o.session > 1 && st.Session == o.session {
		return nil // started by the start program vigil ran
	}
	ids, err := procstat.UserIDs(pid)
	if err != nil {
		return err
	}
	if may(o.uid, ids) && !w.Open && may(w.UID, ids) {
		return nil
	}
	return &ForeignError{Path: path, PID: pid, UID: ids.Real, Service: o.uid, WriterID: w.UID}
}

// mayKill reports whether pid (the service's process, or a member of its
// process group) may be signalled: in the start program's session, or a
// process the service's user could signal.
func (o owner) mayKill(pid int) bool {
	if st, err := procstat.ReadStat(pid); err == nil && o.session > 1 && st.Session == o.session {
		return true
	}
	ids, err := procstat.UserIDs(pid)
	return err == nil && may(o.uid, ids)
}

// killGroup sends SIGKILL to the members of process group pgid that the
// owner may signal, each through a pidfd taken while it is still in the
// group (a pid reused meanwhile is not hit).
func (o owner) killGroup(pgid int) {
	snap, err := procstat.Scan()
	if err != nil {
		return
	}
	for _, pid := range snap.InGroup(pgid) {
		if pid == os.Getpid() {
			continue
		}
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			continue
		}
		if g, err := unix.Getpgid(pid); err == nil && g == pgid && o.mayKill(pid) {
			_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
		}
		unix.Close(fd)
	}
}
