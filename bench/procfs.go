package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat. It
// is 100 on every Linux architecture Go supports.
const clockTicks = 100

// procStat holds the fields of /proc/PID/stat the harness uses.
type procStat struct {
	State      byte   // R, S, D, Z, ...
	PPid       int    // parent pid
	Ticks      uint64 // utime + stime, in clock ticks
	ChildTicks uint64 // cutime + cstime: children it waited for, in clock ticks
}

// parseStat parses the contents of /proc/PID/stat. The command name in
// parentheses may itself contain spaces and parentheses, so the fields are
// counted from the last ')'.
func parseStat(s string) (procStat, error) {
	end := strings.LastIndexByte(s, ')')
	if end < 0 {
		return procStat{}, errors.New("stat: no closing parenthesis")
	}
	f := strings.Fields(s[end+1:])
	// f[0] is field 3 (state); utime is field 14 and stime field 15,
	// cutime and cstime fields 16 and 17.
	if len(f) < 15 || len(f[0]) != 1 {
		return procStat{}, fmt.Errorf("stat: %d fields after the name", len(f))
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return procStat{}, fmt.Errorf("stat ppid: %w", err)
	}
	utime, err := strconv.ParseUint(f[11], 10, 64)
	if err != nil {
		return procStat{}, fmt.Errorf("stat utime: %w", err)
	}
	stime, err := strconv.ParseUint(f[12], 10, 64)
	if err != nil {
		return procStat{}, fmt.Errorf("stat stime: %w", err)
	}
	var child uint64
	for _, x := range f[13:15] {
		v, err := strconv.ParseUint(x, 10, 64)
		if err != nil {
			return procStat{}, fmt.Errorf("stat cutime/cstime: %w", err)
		}
		child += v
	}
	return procStat{State: f[0][0], PPid: ppid, Ticks: utime + stime, ChildTicks: child}, nil
}

func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, fmt.Errorf("read stat of %d: %w", pid, err)
	}
	return parseStat(string(b))
}

// memUse is resident and proportional set size, and the private part
// (pages no other process maps: what the process alone costs), in KiB.
type memUse struct {
	RSS, PSS, Private uint64
}

// parseSmapsRollup extracts Rss and Pss (kB) from /proc/PID/smaps_rollup.
func parseSmapsRollup(s string) (memUse, error) {
	var m memUse
	var haveRSS, havePSS bool
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			continue
		}
		var dst *uint64
		switch f[0] {
		case "Rss:":
			dst, haveRSS = &m.RSS, true
		case "Pss:":
			dst, havePSS = &m.PSS, true
		case "Private_Clean:", "Private_Dirty:":
			dst = &m.Private
		default:
			continue
		}
		v, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			return memUse{}, fmt.Errorf("smaps_rollup %s: %w", f[0], err)
		}
		*dst += v
	}
	if !haveRSS || !havePSS {
		return memUse{}, errors.New("smaps_rollup: Rss or Pss missing")
	}
	return m, nil
}

func readMem(pid int) (memUse, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return memUse{}, fmt.Errorf("read smaps_rollup of %d: %w", pid, err)
	}
	return parseSmapsRollup(string(b))
}

// parentMap maps every visible pid to its parent pid. Processes that vanish
// during the scan are skipped.
func parentMap() (map[int]int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("list /proc: %w", err)
	}
	parents := make(map[int]int, len(ents))
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		st, err := parseStat(string(b))
		if err != nil {
			continue
		}
		parents[pid] = st.PPid
	}
	return parents, nil
}

// descendantsOf returns root and every process below it, sorted.
func descendantsOf(parents map[int]int, root int) []int {
	children := make(map[int][]int)
	for pid, pp := range parents {
		children[pp] = append(children[pp], pid)
	}
	out := []int{root}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	slices.Sort(out)
	return out
}

// descendants scans /proc for the tree under root.
func descendants(root int) ([]int, error) {
	parents, err := parentMap()
	if err != nil {
		return nil, err
	}
	return descendantsOf(parents, root), nil
}

// cpuTicks reads utime+stime of each pid; processes that are gone are
// skipped and counted in the second value.
func cpuTicks(pids []int) (map[int]uint64, int) {
	out := make(map[int]uint64, len(pids))
	gone := 0
	for _, p := range pids {
		st, err := readStat(p)
		if err != nil {
			gone++
			continue
		}
		out[p] = st.Ticks
	}
	return out, gone
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	st, err := readStat(pid)
	return err == nil && st.State != 'Z' && st.State != 'X'
}

// onCPU returns the time pid has run, in all its threads (the first field
// of each /proc/PID/task/TID/schedstat, in nanoseconds: exact, where
// utime and stime count clock ticks), plus the CPU of the children it
// waited for (cutime and cstime, which only come in ticks).
func onCPU(pid int) (time.Duration, error) {
	st, err := readStat(pid)
	if err != nil {
		return 0, err
	}
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0, fmt.Errorf("list threads of %d: %w", pid, err)
	}
	var ns uint64
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, t.Name()))
		if err != nil {
			continue // the thread ended meanwhile
		}
		v, err := parseSchedstat(string(b))
		if err != nil {
			return 0, fmt.Errorf("schedstat of %d: %w", pid, err)
		}
		ns += v
	}
	return time.Duration(ns) + time.Duration(st.ChildTicks)*time.Second/clockTicks, nil
}

// parseSchedstat returns the first field of a schedstat line: the time on
// the CPU in nanoseconds.
func parseSchedstat(s string) (uint64, error) {
	f := strings.Fields(s)
	if len(f) < 1 {
		return 0, errors.New("empty schedstat")
	}
	return strconv.ParseUint(f[0], 10, 64)
}
