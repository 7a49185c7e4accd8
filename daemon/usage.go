package daemon

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/procstat"
)

// usageMaxAge is how old a /proc pass may be and still serve a status:
// the status page, a scrape and a command line asking within the same
// second share one pass (about 1 ms per 100 processes on the machine).
const usageMaxAge = time.Second

// usageCache keeps the latest pass over /proc. Its zero value is ready;
// mu is held across a pass, so callers at the same moment share one.
type usageCache struct {
	mu    sync.Mutex
	snap  *procstat.Snapshot
	taken time.Time // monotonic reading of the pass
}

// get returns a pass no older than usageMaxAge that saw every pid of
// want, making a new one if needed.
func (c *usageCache) get(want []int) (*procstat.Snapshot, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.snap != nil && time.Since(c.taken) < usageMaxAge && c.snap.HasAll(want) {
		return c.snap, nil
	}
	snap, err := procstat.Scan()
	if err != nil {
		return nil, err
	}
	c.snap, c.taken = snap, time.Now()
	return snap, nil
}

// fillUsage sets the Usage of every process in ps whose executable runs,
// from one pass over /proc for all of them (at most usageMaxAge old, and
// newer than every executable's start). Figures that cannot be read (the
// process ended meanwhile) leave Usage nil.
func (d *Daemon) fillUsage(ps []control.ProcessStatus) {
	var running []int
	for _, p := range ps {
		if p.ExecPID != 0 {
			running = append(running, p.ExecPID)
		}
	}
	if len(running) == 0 {
		return
	}
	snap, err := d.usage.get(running)
	if err != nil {
		d.log.Debug("usage", "error", err)
		return
	}
	for i := range ps {
		if ps[i].ExecPID != 0 {
			ps[i].Usage = usageOf(snap, ps[i].PID, ps[i].ExecPID)
		}
	}
}

// FillUsage sets the Usage of every running process in ps that has a pid
// file pid (its init), from a fresh pass over /proc: for back ends that
// know the init but not the executable (systemd's units).
func FillUsage(ps []control.ProcessStatus) error {
	if !slices.ContainsFunc(ps, func(p control.ProcessStatus) bool { return p.State == "running" && p.PID != 0 }) {
		return nil
	}
	snap, err := procstat.Scan()
	if err != nil {
		return fmt.Errorf("usage: %w", err)
	}
	for i := range ps {
		if ps[i].State == "running" && ps[i].PID != 0 {
			ps[i].Usage = usageOf(snap, ps[i].PID, ps[i].ExecPID)
		}
	}
	return nil
}

// usageOf sums a process's use. Under an init (pid, distinct from the
// executable's), that is every child of the init and its descendants:
// the executable and any orphans the init has adopted (it is a subreaper),
// not the init itself. A process without an init (a monit program) is the
// executable's tree. Open descriptors are the executable's (when execPID
// is unknown, those of the init's only child, if it has one).
func usageOf(snap *procstat.Snapshot, pid, execPID int) *control.Usage {
	var u procstat.Usage
	if pid != 0 && pid != execPID {
		children := snap.Children(pid)
		for _, c := range children {
			u = u.Add(snap.Tree(c))
		}
		if execPID == 0 && len(children) == 1 {
			execPID = children[0]
		}
	} else {
		u = snap.Tree(execPID)
	}
	if u.Processes == 0 {
		return nil
	}
	var fds int
	if execPID != 0 {
		fds, _ = procstat.OpenFDs(execPID) // zero if it ended since the scan
	}
	return &control.Usage{CPUSeconds: u.CPUSeconds, RSSBytes: u.RSSBytes, OpenFDs: fds, Processes: u.Processes}
}
