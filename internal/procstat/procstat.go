// Package procstat reads what processes use from Linux's /proc: CPU time,
// resident memory, open descriptors, and the tree of descendants. It keeps
// no state: each call reads /proc afresh. Figures of processes that end
// while they are read are left out, never an error.
package procstat

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// ticksPerSecond is the kernel's USER_HZ, the unit of /proc's CPU times:
// 100 on every Linux architecture vigil builds for.
const ticksPerSecond = 100

// maxTree bounds a walk of descendants, against a fork bomb.
const maxTree = 4096

// Stat is one process's figures from /proc/PID/stat.
type Stat struct {
	PID, PPID int
	Group     int  // the process group id
	Session   int  // the session id (the pid of its leader)
	State     byte // R, S, D, Z ... as in proc(5)
	// CPUTicks is user+system time of the process itself; ChildTicks that
	// of its children it has waited for (and theirs), in USER_HZ ticks.
	CPUTicks, ChildTicks uint64
	StartTicks           uint64 // when it started, in USER_HZ ticks since boot
	RSSBytes             int64
	VSizeBytes           uint64 // its virtual memory
}

// CPUSeconds is CPUTicks in seconds.
func (s Stat) CPUSeconds() float64 { return float64(s.CPUTicks) / ticksPerSecond }

// Started is when the process started, given when the machine booted
// (BootTime).
func (s Stat) Started(boot time.Time) time.Time {
	return boot.Add(time.Duration(s.StartTicks) * (time.Second / ticksPerSecond))
}

// ReadStat reads /proc/PID/stat.
func ReadStat(pid int) (Stat, error) {
	var buf [1024]byte
	n, err := readSmall(fmt.Sprintf("/proc/%d/stat", pid), buf[:])
	if err != nil {
		return Stat{}, err
	}
	return parseStat(buf[:n])
}

// parseStat parses a /proc/PID/stat line without allocating: a pass
// over the machine parses one line per process. The command name, in
// parentheses, may hold spaces and parentheses itself: the fields start
// after the last ')'.
func parseStat(line []byte) (Stat, error) {
	open, close := bytes.IndexByte(line, '('), bytes.LastIndexByte(line, ')')
	if open < 1 || close < open {
		return Stat{}, fmt.Errorf("stat line %.40q: no command name", line)
	}
	pid, ok := parseDecimal(bytes.TrimSpace(line[:open]))
	if !ok {
		return Stat{}, fmt.Errorf("stat line %.40q: pid is not a number", line)
	}
	// After the name: state(3) ppid(4) ... utime(14) stime(15) cutime(16)
	// cstime(17) ... starttime(22) vsize(23) rss(24), numbered as in proc(5).
	// A field that is not a plain number (tty_pgrp's -1) reads as 0.
	var f [lastField + 1][]byte
	n := 3
	for field := range bytes.FieldsSeq(line[close+1:]) {
		f[n] = field
		if n++; n > lastField {
			break
		}
	}
	if n <= lastField {
		return Stat{}, fmt.Errorf("stat line %.40q: %d fields after the name", line, n-3)
	}
	num := func(i int) uint64 { v, _ := parseDecimal(f[i]); return v }
	return Stat{
		PID:        int(pid),
		PPID:       int(num(4)),
		Group:      int(num(5)),
		Session:    int(num(6)),
		State:      f[3][0],
		CPUTicks:   num(14) + num(15),
		ChildTicks: num(16) + num(17),
		StartTicks: num(22),
		RSSBytes:   int64(num(24)) * int64(os.Getpagesize()),
		VSizeBytes: num(23),
	}, nil
}

// IDs are a process's user ids, as the kernel judges who may signal it
// (kill(2): the sender's real or effective uid must be the target's real
// or saved one, unless the sender is privileged).
type IDs struct{ Real, Effective, Saved uint32 }

// UserIDs reads pid's user ids from /proc/PID/status.
func UserIDs(pid int) (IDs, error) {
	var buf [4096]byte
	n, err := readSmall(fmt.Sprintf("/proc/%d/status", pid), buf[:])
	if err != nil {
		return IDs{}, err
	}
	for line := range bytes.SplitSeq(buf[:n], []byte("\n")) {
		rest, ok := bytes.CutPrefix(line, []byte("Uid:"))
		if !ok {
			continue
		}
		var v [3]uint32
		i := 0
		for f := range bytes.FieldsSeq(rest) {
			d, ok := parseDecimal(f)
			if !ok || d > 1<<32-1 {
				break
			}
			v[i] = uint32(d)
			if i++; i == len(v) {
				return IDs{Real: v[0], Effective: v[1], Saved: v[2]}, nil
			}
		}
		break
	}
	return IDs{}, fmt.Errorf("/proc/%d/status: no Uid line", pid)
}

// lastField is the number of the last field of /proc/PID/stat that
// parseStat reads (rss).
const lastField = 24

// parseDecimal parses an unsigned decimal number of at most 19 digits;
// false for anything else.
func parseDecimal(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	return v, true
}

// readSmall reads a small /proc file into buf without allocating.
func readSmall(path string, buf []byte) (int, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	total := 0
	for total < len(buf) {
		n, err := unix.Read(fd, buf[total:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, &os.PathError{Op: "read", Path: path, Err: err}
		}
		if n == 0 {
			break
		}
		total += n
	}
	return total, nil
}

// OpenFDs counts the descriptors pid has open.
func OpenFDs(pid int) (int, error) {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	// Since Linux 6.2 the size of the directory is the count.
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err == nil && st.Size > 0 {
		return int(st.Size), nil
	}
	f, err := os.Open(dir)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return 0, fmt.Errorf("list %s: %w", dir, err)
	}
	return len(names), nil
}

// RSS returns pid's resident memory in bytes.
func RSS(pid int) (int64, error) {
	s, err := ReadStat(pid)
	return s.RSSBytes, err
}

// MemTotal returns the machine's memory in bytes, from /proc/meminfo.
func MemTotal() (int64, error) {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	for l := range strings.SplitSeq(string(data), "\n") {
		if rest, ok := strings.CutPrefix(l, "MemTotal:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("/proc/meminfo: MemTotal: %w", err)
			}
			return kb * 1024, nil
		}
	}
	return 0, errors.New("/proc/meminfo: no MemTotal")
}

// BootTime returns when the machine booted, to the second, from
// /proc/stat's btime.
func BootTime() (time.Time, error) {
	data, err := os.ReadFile("/proc/stat") // btime follows a line per CPU and the interrupts' counts
	if err != nil {
		return time.Time{}, err
	}
	return parseBootTime(string(data))
}

func parseBootTime(stat string) (time.Time, error) {
	for l := range strings.SplitSeq(stat, "\n") {
		if rest, ok := strings.CutPrefix(l, "btime "); ok {
			sec, err := strconv.ParseInt(strings.TrimSpace(rest), 10, 64)
			if err != nil {
				return time.Time{}, fmt.Errorf("/proc/stat: btime: %w", err)
			}
			return time.Unix(sec, 0), nil
		}
	}
	return time.Time{}, errors.New("/proc/stat: no btime")
}

// Descendants lists the processes below pid, found through the kernel's
// per-thread children lists (cheap for one small tree; see Scan for many),
// at most maxTree of them.
func Descendants(pid int) []int {
	var out []int
	queue := []int{pid}
	for len(queue) > 0 && len(out) < maxTree {
		p := queue[0]
		queue = queue[1:]
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", p))
		if err != nil {
			continue
		}
		for _, t := range tasks {
			data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", p, t.Name()))
			if err != nil {
				continue
			}
			for f := range strings.FieldsSeq(string(data)) {
				if c, err := strconv.Atoi(f); err == nil {
					out = append(out, c)
					queue = append(queue, c)
				}
			}
		}
	}
	return out
}
