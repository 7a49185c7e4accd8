package monit

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/internal/monit/monitrc"
	"github.com/vigil-bosh/vigil/internal/procstat"
)

// Env is the environment monit gives its programs.
func Env(svc *monitrc.Service, host, event, desc string, pid int) []string {
	env := append(os.Environ(),
		"MONIT_DATE="+time.Now().Format("Mon, 02 Jan 2006 15:04:05 -0700"),
		"MONIT_SERVICE="+svc.Name, "MONIT_HOST="+host, "MONIT_EVENT="+event,
		"MONIT_DESCRIPTION="+desc)
	if svc.Type == monitrc.TypeProcess {
		env = append(env, "MONIT_PROCESS_PID="+strconv.Itoa(pid), "MONIT_PROCESS_MEMORY=0",
			"MONIT_PROCESS_CHILDREN=0", "MONIT_PROCESS_CPU_PERCENT=0")
	}
	return env
}

// Running is a program Spawn started: the leader of a session of its own
// (its pid is the session's id). Done receives its end once (nil on exit
// 0); whatever it left in its session lives on until EndSession.
type Running struct {
	PID  int
	Done <-chan error
}

// Spawn starts p without a shell, in a new session, with stdio on
// /dev/null; a goroutine reaps it and sends its end on Done.
func Spawn(p *monitrc.Program, env []string) (*Running, error) {
	cmd := exec.Command(p.Argv[0], p.Argv[1:]...)
	cmd.Env = env
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if cred, err := credential(p); err != nil {
		return nil, err
	} else if cred != nil {
		cmd.SysProcAttr.Credential = cred
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", p.Argv[0], err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	return &Running{PID: cmd.Process.Pid, Done: done}, nil
}

// Wait returns the program's end, once it has ended or ctx is done (then
// its session is ended first). With endOnFailure (a check's start
// program) a program that fails has its session ended too, so that what
// it left behind does not pile up at every retry; a program that exits 0
// keeps what it started.
func (r *Running) Wait(ctx context.Context, endOnFailure bool) error {
	var err error
	select {
	case err = <-r.Done:
	case <-ctx.Done():
		EndSession(r.PID, 0)
		err = <-r.Done
	}
	if err != nil && endOnFailure {
		EndSession(r.PID, 0)
	}
	return err
}

// EndSession kills (SIGKILL) every process left in the session sid, the
// session of a program Spawn started, except keep (the service's own
// process, 0 for none). A session id is not reused while one of its
// members lives, so nothing outside it is hit.
func EndSession(sid, keep int) {
	if sid <= 1 {
		return
	}
	snap, err := procstat.Scan()
	if err != nil {
		return
	}
	for _, pid := range snap.InSession(sid) {
		if pid != keep && pid != os.Getpid() {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
	}
}

func credential(p *monitrc.Program) (*syscall.Credential, error) {
	if p.UID == "" && p.GID == "" {
		return nil, nil
	}
	c := &syscall.Credential{Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid())}
	if p.UID != "" {
		uid, gid, err := lookupUser(p.UID)
		if err != nil {
			return nil, err
		}
		c.Uid, c.Gid = uid, gid
	}
	if p.GID != "" {
		gid, err := lookupGroup(p.GID)
		if err != nil {
			return nil, err
		}
		c.Gid = gid
	}
	if int(c.Uid) == os.Getuid() && int(c.Gid) == os.Getgid() {
		return nil, nil
	}
	return c, nil
}

// lookupUser returns the uid and primary group of a user given by name or
// number (monit takes both: as uid vcap, as uid 1000).
func lookupUser(name string) (uid, gid uint32, err error) {
	u, err := user.Lookup(name)
	if err != nil {
		if n, nerr := strconv.ParseUint(name, 10, 32); nerr == nil {
			if u, err = user.LookupId(name); err != nil {
				return uint32(n), uint32(os.Getgid()), nil // a uid without a passwd entry
			}
		} else {
			return 0, 0, fmt.Errorf("uid %s: %w", name, err)
		}
	}
	id, _ := strconv.ParseUint(u.Uid, 10, 32)
	g, _ := strconv.ParseUint(u.Gid, 10, 32)
	return uint32(id), uint32(g), nil
}

// lookupGroup returns the gid of a group given by name or number.
func lookupGroup(name string) (uint32, error) {
	if n, err := strconv.ParseUint(name, 10, 32); err == nil {
		return uint32(n), nil
	}
	g, err := user.LookupGroup(name)
	if err != nil {
		return 0, fmt.Errorf("gid %s: %w", name, err)
	}
	id, _ := strconv.ParseUint(g.Gid, 10, 32)
	return uint32(id), nil
}
