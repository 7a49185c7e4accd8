package container

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/internal/regfile"
)

// Stamps coordinates the drains of a pod's containers through a directory
// they share (an emptyDir volume). Each container registers itself when it
// starts (NAME.up) and marks itself drained once its drains are done
// (NAME.drained). A preStop hook in every container waits until every
// registered container has drained, so no container ends while another one's
// drain still needs it; and a container whose job process has exited stays
// alive (vigil is its PID 1) and takes part all the same.
type Stamps struct {
	Dir  string
	Name string // this container's name, unique in the pod
}

// NewStamps checks name (it becomes a file name) and returns the stamps.
func NewStamps(dir, name string) (*Stamps, error) {
	if err := boshpath.CheckName(name); err != nil {
		return nil, fmt.Errorf("container name: %w", err)
	}
	return &Stamps{Dir: dir, Name: name}, nil
}

// Register writes NAME.up.
func (s *Stamps) Register() error { return s.touch(".up") }

// MarkDrained writes NAME.drained.
func (s *Stamps) MarkDrained() error { return s.touch(".drained") }

// Drained reports whether this container's drains have run.
func (s *Stamps) Drained() bool {
	_, err := os.Stat(filepath.Join(s.Dir, s.Name+".drained"))
	return err == nil
}

func (s *Stamps) touch(suffix string) error {
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return fmt.Errorf("stamps: %w", err)
	}
	// The directory is shared by the pod's containers: no symlink, no FIFO.
	f, err := regfile.Open(filepath.Join(s.Dir, s.Name+suffix), os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("stamps: %w", err)
	}
	return f.Close()
}

// AfterDrain ends a pod container's preStop hook (vigil drain --wait-all)
// whatever its drains' outcome: a failed drain is over too, so it marks this
// container drained, waits (within ctx, the grace period) until every
// container of the pod has drained, and returns drainErr joined with what
// went wrong since: the failure is reported once the pod has drained as
// one, not before.
func (s *Stamps) AfterDrain(ctx context.Context, drainErr error) error {
	if err := s.MarkDrained(); err != nil {
		return errors.Join(drainErr, err)
	}
	return errors.Join(drainErr, s.WaitAll(ctx))
}

// pending lists the registered containers that have not drained yet.
func (s *Stamps) pending() ([]string, error) {
	entries, err := os.ReadDir(s.Dir)
	if err != nil {
		return nil, fmt.Errorf("stamps: %w", err)
	}
	up, drained := map[string]bool{}, map[string]bool{}
	for _, e := range entries {
		if n, ok := strings.CutSuffix(e.Name(), ".up"); ok {
			up[n] = true
		} else if n, ok := strings.CutSuffix(e.Name(), ".drained"); ok {
			drained[n] = true
		}
	}
	var out []string
	for n := range up {
		if !drained[n] {
			out = append(out, n)
		}
	}
	return out, nil
}

// WaitAll blocks until every registered container has drained, or ctx is
// done. It waits on inotify events of the directory, never by polling.
func (s *Stamps) WaitAll(ctx context.Context) error {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return fmt.Errorf("stamps: inotify: %w", err)
	}
	f := os.NewFile(uintptr(fd), "inotify") // non-blocking: reads wait in the poller
	defer f.Close()
	if _, err := unix.InotifyAddWatch(fd, s.Dir, unix.IN_CREATE|unix.IN_MOVED_TO|unix.IN_DELETE); err != nil {
		return fmt.Errorf("stamps: watch %s: %w", s.Dir, err)
	}
	stop := context.AfterFunc(ctx, func() { f.Close() })
	defer stop()
	buf := make([]byte, 4096)
	for {
		left, err := s.pending()
		if err != nil {
			return err
		}
		if len(left) == 0 {
			return nil
		}
		if _, err := f.Read(buf); err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("still draining: %s: %w", strings.Join(left, ", "), context.Cause(ctx))
			}
			return fmt.Errorf("stamps: %w", err)
		}
	}
}
