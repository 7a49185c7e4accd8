package procinit

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// childrenOf lists the live children of pid. It reads the kernel's
// per-thread children lists, and scans /proc when the kernel lacks them.
func childrenOf(pid int) []int {
	files, _ := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "task", "*", "children"))
	if len(files) > 0 {
		var out []int
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			for _, field := range strings.Fields(string(b)) {
				if n, err := strconv.Atoi(field); err == nil {
					out = append(out, n)
				}
			}
		}
		return out
	}
	return scanChildren(pid)
}

// scanChildren finds the processes whose parent is pid by reading every
// /proc/N/stat.
func scanChildren(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, ok := parentOf(n); ok && ppid == pid {
			out = append(out, n)
		}
	}
	return out
}

// parentOf reads the parent pid from /proc/N/stat. The command name in
// parentheses may itself hold spaces and parentheses, so the fields are
// taken after the last ')'.
func parentOf(pid int) (int, bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(f[1])
	return ppid, err == nil
}

// ChildrenOf lists the live children of pid, as the init sees its own.
func ChildrenOf(pid int) []int { return childrenOf(pid) }

// ParentOf returns the parent pid of pid from /proc, and whether it could
// be read.
func ParentOf(pid int) (int, bool) { return parentOf(pid) }
