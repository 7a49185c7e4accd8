package launch

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/internal/health"
	"github.com/vigil-bosh/vigil/internal/launch/procinit"
)

// prepareNotify sets up the readiness notification the process asks for:
// for systemd's protocol, a datagram socket in the job's tmp directory named
// in NOTIFY_SOCKET (with WATCHDOG_USEC when a watchdog is set); for s6's, the
// fd the init hands to the executable. It returns the socket, if any.
func (r *Runner) prepareNotify(launch *procinit.Launch) (*health.NotifySocket, error) {
	h := r.p.Health
	switch h.Notify {
	case "fd":
		launch.NotifyFD = h.NotifyFD
		if launch.Sandbox != nil && h.NotifyFD < 5 {
			launch.Warnings = append(launch.Warnings, fmt.Sprintf(
				"notify fd:%d is not handed through the sandbox (fds 3 and 4 are its own): use fd 5 or above", h.NotifyFD))
		}
	case "systemd":
		// The job's tmp directory has the same path inside the sandbox.
		path := filepath.Join(r.opts.Layout.TmpDir(r.p.Job), "vigil-"+r.p.Name+".notify")
		_ = os.Remove(path) // left by an earlier instance
		s, err := health.ListenNotify(path)
		if err != nil {
			return nil, err
		}
		// The process's user must be able to send; the directory is the
		// job's own, so a symlink may replace the socket: never follow one.
		if err := chmodSocket(path, 0o666); err != nil {
			_ = s.Close()
			return nil, fmt.Errorf("notify socket: %w", err)
		}
		launch.Env = append(launch.Env, "NOTIFY_SOCKET="+path)
		if h.Watchdog > 0 {
			launch.Env = append(launch.Env, "WATCHDOG_USEC="+strconv.FormatInt(h.Watchdog.Microseconds(), 10))
		}
		return s, nil
	}
	return nil, nil
}

// chmodSocket sets the mode of the socket at path, refusing anything else
// there (a symlink above all): it changes the inode it opened (O_PATH,
// O_NOFOLLOW) through /proc/self/fd, so the path is resolved only once.
func chmodSocket(path string, mode uint32) error {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("stat %s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return fmt.Errorf("refusing to chmod %s: not a socket", path)
	}
	return unix.Chmod("/proc/self/fd/"+strconv.Itoa(fd), mode)
}

// Ready receives true when the executable says it is ready and false when
// its watchdog expired (supervise.ReadyNotifier). Without notification it
// is nil: it never receives.
func (p *Process) Ready() <-chan bool { return p.ready }

// sendReady passes a notification on without ever blocking the reader.
func (p *Process) sendReady(ok bool) {
	if p.ready == nil {
		return
	}
	select {
	case p.ready <- ok:
	default:
	}
}

// attachNotify makes p report readiness: from the init's reports (fd) or
// from the systemd socket s, read until the init is reaped. With a
// watchdog, a gap of more than watchdog between WATCHDOG=1 keep-alives
// after READY=1 is reported as false, once.
func (p *Process) attachNotify(notify string, s *health.NotifySocket, watchdog time.Duration) {
	if notify == "" {
		return
	}
	p.ready = make(chan bool, 4)
	if s == nil {
		return
	}
	go func() { <-p.exited; _ = s.Close() }()
	notices := make(chan health.Notice)
	go func() {
		defer close(notices)
		for {
			n, err := s.Receive()
			if err != nil {
				return
			}
			select {
			case notices <- n:
			case <-p.exited:
				return
			}
		}
	}()
	go func() {
		var expiry <-chan time.Time
		var t *time.Timer
		for {
			select {
			case n, ok := <-notices:
				if !ok {
					return
				}
				if n.Ready {
					p.sendReady(true)
				}
				if watchdog > 0 && (n.Ready || n.Watchdog) {
					if t != nil {
						t.Stop()
					}
					t = time.NewTimer(watchdog)
					expiry = t.C
				}
			case <-expiry:
				expiry = nil
				p.sendReady(false)
			}
		}
	}()
}
