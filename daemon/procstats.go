package daemon

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/vigil-bosh/vigil/monitcompat"
)

// procStats fills in memory figures from /proc (resident set of the
// process, and of it with its descendants).
func procStats(pid int, st *monitcompat.UnitStatus) {
	total := memTotalKB()
	own := rssKB(pid)
	st.MemKB = own
	sum, n := own, 0
	for _, c := range descendants(pid) {
		sum += rssKB(c)
		n++
	}
	st.MemKBTotal, st.Children = sum, n
	if total > 0 {
		st.MemPct = 100 * float64(own) / float64(total)
		st.MemPctTotal = 100 * float64(sum) / float64(total)
	}
}

func rssKB(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/statm", pid))
	if err != nil {
		return 0
	}
	var size, rss int64
	if _, err := fmt.Sscan(string(data), &size, &rss); err != nil {
		return 0
	}
	return rss * int64(os.Getpagesize()) / 1024
}

func memTotalKB() int64 {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	var kb int64
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "MemTotal:") {
			_, _ = fmt.Sscan(strings.TrimPrefix(l, "MemTotal:"), &kb)
		}
	}
	return kb
}

// descendants lists the processes below pid (through the kernel's
// children lists), bounded.
func descendants(pid int) []int {
	var out []int
	queue := []int{pid}
	for len(queue) > 0 && len(out) < 4096 {
		p := queue[0]
		queue = queue[1:]
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", p))
		for _, t := range tasks {
			data, err := os.ReadFile(t)
			if err != nil {
				continue
			}
			for _, f := range strings.Fields(string(data)) {
				var c int
				if _, err := fmt.Sscan(f, &c); err == nil {
					out = append(out, c)
					queue = append(queue, c)
				}
			}
		}
	}
	return out
}
