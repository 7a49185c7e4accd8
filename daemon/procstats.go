package daemon

import (
	"github.com/vigil-bosh/vigil/monitcompat"
	"github.com/vigil-bosh/vigil/procstat"
)

// procStats fills in monit's memory figures from /proc (resident set of the
// process, and of it with its descendants). Figures that cannot be read
// are zero.
func procStats(pid int, st *monitcompat.UnitStatus) {
	total, _ := procstat.MemTotal()
	own := rssKB(pid)
	st.MemKB = own
	sum, n := own, 0
	for _, c := range procstat.Descendants(pid) {
		sum += rssKB(c)
		n++
	}
	st.MemKBTotal, st.Children = sum, n
	if total > 0 {
		st.MemPct = 100 * float64(own) / float64(total/1024)
		st.MemPctTotal = 100 * float64(sum) / float64(total/1024)
	}
}

// rssKB is pid's resident memory in KiB, zero when it cannot be read.
func rssKB(pid int) int64 {
	b, _ := procstat.RSS(pid)
	return b / 1024
}
