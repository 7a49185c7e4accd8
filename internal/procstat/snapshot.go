package procstat

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// Usage is what a tree of processes uses at one moment.
type Usage struct {
	CPUSeconds float64 // user+system, including children the tree has waited for
	RSSBytes   int64   // resident memory, summed (shared pages count in each)
	Processes  int
}

// Snapshot is every process of the machine at one moment: one read of
// /proc/PID/stat each, so that the trees of many processes cost one pass.
// It is immutable.
type Snapshot struct {
	stats    map[int]Stat
	children map[int][]int
}

// Scan reads every process's /proc/PID/stat, on up to GOMAXPROCS (at most
// 4) goroutines: the kernel's work of writing each file is the cost.
func Scan() (*Snapshot, error) {
	dir, err := unix.Open("/proc", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: "/proc", Err: err}
	}
	defer unix.Close(dir)
	pids, err := listPIDs(dir)
	if err != nil {
		return nil, fmt.Errorf("list /proc: %w", err)
	}
	workers := max(1, min(runtime.GOMAXPROCS(0), 4, len(pids)/64))
	parts := make([][]Stat, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() { parts[w] = readStats(dir, pids[w*len(pids)/workers:(w+1)*len(pids)/workers]) })
	}
	wg.Wait()
	s := &Snapshot{stats: make(map[int]Stat, len(pids)), children: make(map[int][]int, len(pids)/2)}
	for _, part := range parts {
		for _, st := range part {
			s.stats[st.PID] = st
			s.children[st.PPID] = append(s.children[st.PPID], st.PID)
		}
	}
	return s, nil
}

// listPIDs returns the numeric entries of the /proc directory dir,
// parsed from its raw entries (no string per entry).
func listPIDs(dir int) ([]int, error) {
	var buf [16 << 10]byte
	pids := make([]int, 0, 512)
	for {
		n, err := unix.ReadDirent(dir, buf[:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			return pids, nil
		}
		// Each entry: inode (8 bytes), offset (8), record length (2),
		// type (1), then the name, NUL-terminated.
		for rec := buf[:n]; len(rec) >= 19; {
			size := int(binary.NativeEndian.Uint16(rec[16:18]))
			if size < 19 || size > len(rec) {
				return nil, fmt.Errorf("malformed directory entry of %d bytes", size)
			}
			name := rec[19:size]
			if end := bytes.IndexByte(name, 0); end >= 0 {
				name = name[:end]
			}
			if pid, ok := parseDecimal(name); ok {
				pids = append(pids, int(pid))
			}
			rec = rec[size:]
		}
	}
}

// readStats reads the stat file of each of pids under the /proc directory
// dir; processes that end meanwhile are left out.
func readStats(dir int, pids []int) []Stat {
	out := make([]Stat, 0, len(pids))
	var buf [1024]byte
	path := make([]byte, 0, 32)
	for _, pid := range pids {
		path = append(strconv.AppendInt(path[:0], int64(pid), 10), "/stat"...)
		fd, err := unix.Openat(dir, string(path), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			continue // ended meanwhile
		}
		n, err := unix.Read(fd, buf[:])
		unix.Close(fd)
		if err != nil {
			continue
		}
		if st, err := parseStat(buf[:n]); err == nil && st.PID == pid {
			out = append(out, st)
		}
	}
	return out
}

// Stat returns pid's figures, if it was running at the scan.
func (s *Snapshot) Stat(pid int) (Stat, bool) {
	st, ok := s.stats[pid]
	return st, ok
}

// HasAll reports whether every pid of pids was running at the scan.
func (s *Snapshot) HasAll(pids []int) bool {
	for _, p := range pids {
		if _, ok := s.stats[p]; !ok {
			return false
		}
	}
	return true
}

// InSession returns the pids of the members of session sid, in no order.
func (s *Snapshot) InSession(sid int) []int {
	var out []int
	for pid, st := range s.stats {
		if st.Session == sid {
			out = append(out, pid)
		}
	}
	return out
}

// InGroup returns the pids of the members of process group pgid, in no
// order.
func (s *Snapshot) InGroup(pgid int) []int {
	var out []int
	for pid, st := range s.stats {
		if st.Group == pgid {
			out = append(out, pid)
		}
	}
	return out
}

// Children lists pid's direct children at the scan.
func (s *Snapshot) Children(pid int) []int { return s.children[pid] }

// Tree sums the usage of pid and every process below it (at most maxTree).
// A pid not running at the scan uses nothing.
func (s *Snapshot) Tree(pid int) Usage {
	var ticks uint64
	var u Usage
	queue := []int{pid}
	for len(queue) > 0 && u.Processes < maxTree {
		p := queue[0]
		queue = queue[1:]
		st, ok := s.stats[p]
		if !ok {
			continue
		}
		ticks += st.CPUTicks + st.ChildTicks
		u.RSSBytes += st.RSSBytes
		u.Processes++
		queue = append(queue, s.children[p]...)
	}
	u.CPUSeconds = float64(ticks) / ticksPerSecond
	return u
}

// Add returns the sum of u and v.
func (u Usage) Add(v Usage) Usage {
	return Usage{CPUSeconds: u.CPUSeconds + v.CPUSeconds, RSSBytes: u.RSSBytes + v.RSSBytes,
		Processes: u.Processes + v.Processes}
}
