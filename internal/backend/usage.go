package backend

import (
	"fmt"
	"sync"
	"time"

	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/procstat"
)

// usageMaxAge is how old a /proc pass may be and still serve a status:
// the status page, a scrape and a command line asking within the same
// second share one pass (BenchmarkScan: 0.7 ms for 270 processes on the machine).
const usageMaxAge = time.Second

// UsageCache fills statuses with resource use from the latest pass over
// /proc, shared by the statuses taken within usageMaxAge. Its zero value is
// ready; mu is held across a pass, so callers at the same moment share one.
type UsageCache struct {
	mu    sync.Mutex
	snap  *procstat.Snapshot
	taken time.Time   // monotonic reading of the pass
	fds   map[int]int // open descriptors by pid, counted once per pass
	total int64       // the machine's memory in bytes, read once
}

// memTotal returns the machine's memory in bytes (0 when unreadable),
// read from /proc/meminfo the first time only.
func (c *UsageCache) memTotal() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.total == 0 {
		c.total, _ = procstat.MemTotal()
	}
	return c.total
}

// get returns a pass no older than usageMaxAge that saw every pid of
// want, making a new one if needed.
func (c *UsageCache) get(want []int) (*procstat.Snapshot, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.snap != nil && time.Since(c.taken) < usageMaxAge && c.snap.HasAll(want) {
		return c.snap, nil
	}
	snap, err := procstat.Scan()
	if err != nil {
		return nil, err
	}
	c.snap, c.taken, c.fds = snap, time.Now(), map[int]int{}
	return snap, nil
}

// openFDs returns pid's open descriptors as counted for the pass snap
// (zero if it ended meanwhile): the statuses sharing a pass share the
// counts too, so a status within the pass's second reads nothing in /proc.
func (c *UsageCache) openFDs(snap *procstat.Snapshot, pid int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.snap != snap { // a newer pass came meanwhile: count afresh, keep nothing
		n, _ := procstat.OpenFDs(pid)
		return n
	}
	n, ok := c.fds[pid]
	if !ok {
		n, _ = procstat.OpenFDs(pid)
		c.fds[pid] = n
	}
	return n
}

// Memory is what a process and its tree hold, as monit reports it.
type Memory struct {
	OwnBytes, TreeBytes int64  // resident memory of the process, and of it with its descendants
	Children            int    // its descendants
	TotalBytes          int64  // the machine's memory; 0 when unreadable
	OwnTicks, TreeTicks uint64 // CPU time (USER_HZ ticks) of the process, and of it with its descendants
}

// Memory reads pid's memory from the shared pass; false when pid is not
// in it (it has ended).
func (c *UsageCache) Memory(pid int) (Memory, bool) {
	snap, err := c.get([]int{pid})
	if err != nil {
		return Memory{}, false
	}
	own, ok := snap.Stat(pid)
	if !ok {
		return Memory{}, false
	}
	tree := snap.Tree(pid)
	return Memory{OwnBytes: own.RSSBytes, TreeBytes: tree.RSSBytes, Children: tree.Processes - 1,
		TotalBytes: c.memTotal(), OwnTicks: own.CPUTicks, TreeTicks: uint64(tree.CPUSeconds*100 + 0.5)}, true
}

// Fill sets the Usage of every process in ps whose executable runs (its
// ExecPID is known), or that runs under an init whose executable is not
// known (systemd's units: the init's children are then measured), from a
// pass newer than every executable's start. Figures that cannot be read
// (the process ended meanwhile) leave Usage nil.
func (c *UsageCache) Fill(ps []control.ProcessStatus) error {
	var want []int
	for _, p := range ps {
		if pid := measured(p); pid != 0 {
			want = append(want, pid)
		}
	}
	if len(want) == 0 {
		return nil
	}
	snap, err := c.get(want)
	if err != nil {
		return fmt.Errorf("usage: %w", err)
	}
	for i := range ps {
		if measured(ps[i]) != 0 {
			ps[i].Usage = usageOf(snap, ps[i].PID, ps[i].ExecPID, func(pid int) int { return c.openFDs(snap, pid) })
		}
	}
	return nil
}

// measured is the pid that must be in a pass for p's usage: the
// executable's, else a running process's init, else 0 (nothing to measure).
func measured(p control.ProcessStatus) int {
	switch {
	case p.ExecPID != 0:
		return p.ExecPID
	case p.State == "running":
		return p.PID
	}
	return 0
}

// usageOf sums a process's use. Under an init (pid, distinct from the
// executable's), that is every child of the init and its descendants:
// the executable and any orphans the init has adopted (it is a subreaper),
// not the init itself. A process without an init (a monit program) is the
// executable's tree. Open descriptors are the executable's (when execPID
// is unknown, those of the init's only child, if it has one), counted by
// fds.
func usageOf(snap *procstat.Snapshot, pid, execPID int, fds func(pid int) int) *control.Usage {
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
	var open int
	if execPID != 0 {
		open = fds(execPID)
	}
	return &control.Usage{CPUSeconds: u.CPUSeconds, RSSBytes: u.RSSBytes, OpenFDs: open, Processes: u.Processes}
}
