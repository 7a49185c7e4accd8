package daemon

import (
	"github.com/vigil-bosh/vigil/monitcompat"
	"github.com/vigil-bosh/vigil/procstat"
)

// procStats fills in monit's memory figures (resident set of the process,
// and of it with its descendants) from the daemon's shared pass over /proc
// (see UsageCache), not from /proc walks of its own at every unit's status.
// Figures that cannot be read are zero.
func (d *Daemon) procStats(pid int, st *monitcompat.UnitStatus) {
	snap, err := d.usage.get([]int{pid})
	if err != nil {
		return
	}
	own, ok := snap.Stat(pid)
	if !ok {
		return
	}
	tree := snap.Tree(pid)
	st.MemKB, st.MemKBTotal, st.Children = own.RSSBytes/1024, tree.RSSBytes/1024, tree.Processes-1
	st.CPUTicks, st.CPUTicksTotal = own.CPUTicks, uint64(tree.CPUSeconds*100+0.5)
	if total := d.usage.memTotal(); total > 0 {
		st.MemPct = 100 * float64(st.MemKB) / float64(total/1024)
		st.MemPctTotal = 100 * float64(st.MemKBTotal) / float64(total/1024)
	}
}

// rssKB is pid's resident memory in KiB, zero when it cannot be read.
func rssKB(pid int) int64 {
	b, _ := procstat.RSS(pid)
	return b / 1024
}
