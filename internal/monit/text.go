package monit

import (
	"fmt"
	"strings"
	"time"

	"github.com/vigil-bosh/vigil/internal/monit/monitrc"
)

// Uptime formats a duration as monit does: "[Dd ][Hh ]Mm " with a
// trailing blank; days force the hours field.
func Uptime(d time.Duration) string {
	mins := int64(d / time.Minute)
	days, hours, m := mins/(24*60), mins/60%24, mins%60
	var b strings.Builder
	if days > 0 {
		fmt.Fprintf(&b, "%dd ", days)
	}
	if days > 0 || hours > 0 {
		fmt.Fprintf(&b, "%dh ", hours)
	}
	fmt.Fprintf(&b, "%dm ", m)
	return b.String()
}

// healthyWords are monit's status words for a service without failures,
// by type (statusnames).
var healthyWords = [...]string{"accessible", "accessible", "accessible", "running", "online with all services", "running", "accessible"}

// StatusWord is a service's status as monit summary prints it
// (get_service_status_text): not monitored, initializing, the healthy
// word of its type, or the first failure in monit's table order (its
// "changed" word for a change), then the pending action.
func StatusWord(svc *monitrc.Service, st UnitStatus, pending int) string {
	var w string
	switch {
	case st.Monitor == NotMonitored:
		w = "not monitored"
	case st.Monitor == Initializing:
		w = "initializing"
	case st.Events == 0:
		w = healthyWords[svc.Type]
	default:
		w = "unknown"
		for _, e := range eventTexts {
			if st.Events&e.bit != 0 {
				w = EventText(e.bit, true, st.Hints&e.bit != 0)
				break
			}
		}
	}
	if pending != PendingNone {
		w += " - " + actionName(pending) + " pending"
	}
	return w
}

// hasDetails is monit's Util_hasServiceStatus: the figures of a service
// are shown only while it is monitored and exists.
func hasDetails(st UnitStatus) bool {
	return st.Monitor == Monitored && st.Events&(EventNonexist|EventData) == 0
}

func header(e *Engine, now time.Time) string {
	return "The Monit daemon " + Version + " uptime: " + Uptime(now.Sub(e.Started())) + "\n\n"
}

// ctime is C's ctime without its newline.
func ctime(t time.Time) string { return t.Format("Mon Jan _2 15:04:05 2006") }

// Summary renders monit summary.
func Summary(e *Engine, h Host) string {
	var b strings.Builder
	b.WriteString(header(e, h.Now))
	for _, svc := range e.Config().Services {
		name := svc.Type.Word() + " '" + svc.Name + "'"
		fmt.Fprintf(&b, "%-35s %s\n", name, StatusWord(svc, statusOf(e, svc), e.Pending(svc.Name)))
	}
	return b.String()
}

// FullStatus renders monit status (status_service_txt, level full).
func FullStatus(e *Engine, h Host) string {
	var b strings.Builder
	b.WriteString(header(e, h.Now))
	line := func(k, format string, a ...any) { fmt.Fprintf(&b, "  %-33s %s\n", k, fmt.Sprintf(format, a...)) }
	for _, svc := range e.Config().Services {
		st := statusOf(e, svc)
		collected := st.Collected
		if collected.IsZero() {
			collected = h.Now
		}
		fmt.Fprintf(&b, "%s '%s'\n", svc.Type.Word(), svc.Name)
		line("status", "%s", StatusWord(svc, st, e.Pending(svc.Name)))
		line("monitoring status", "%s", [...]string{"not monitored", "monitored", "initializing"}[st.Monitor])
		if hasDetails(st) {
			details(line, svc, st)
		}
		line("data collected", "%s", ctime(collected))
		b.WriteString("\n")
	}
	return b.String()
}

// details writes the figures of a service's type, in monit's order.
func details(line func(k, format string, a ...any), svc *monitrc.Service, st UnitStatus) {
	if f := st.File; f != nil {
		line("permission", "%o", f.Mode)
		line("uid", "%d", f.UID)
		line("gid", "%d", f.GID)
		if svc.Type != monitrc.TypeFilesystem {
			line("timestamp", "%s", ctime(f.Timestamp))
		}
		if svc.Type == monitrc.TypeFile {
			line("size", "%d B", f.Size)
			if f.Checksum != "" {
				line("checksum", "%s(%s)", f.Checksum, f.Hash)
			}
		}
		if fs := f.FS; fs != nil {
			mb := func(blocks int64) float64 { return float64(blocks) / 1048576 * float64(fs.BlockSize) }
			pct := func(part int64) float64 { return 100 * float64(part) / float64(max(fs.Blocks, 1)) }
			line("filesystem flags", "%#x", fs.Flags)
			line("block size", "%d B", fs.BlockSize)
			line("blocks total", "%d [%.1f MB]", fs.Blocks, mb(fs.Blocks))
			line("blocks free for non superuser", "%d [%.1f MB] [%.1f%%]", fs.Free, mb(fs.Free), pct(fs.Free))
			line("blocks free total", "%d [%.1f MB] [%.1f%%]", fs.FreeTotal, mb(fs.FreeTotal), pct(fs.FreeTotal))
			if fs.Files > 0 {
				line("inodes total", "%d", fs.Files)
				line("inodes free", "%d [%.1f%%]", fs.FilesFree, 100*float64(fs.FilesFree)/float64(fs.Files))
			}
		}
	}
	if svc.Type == monitrc.TypeProcess && st.Running {
		line("pid", "%d", st.PID)
		line("parent pid", "%d", st.PPID)
		line("uptime", "%s", Uptime(st.Uptime))
		line("children", "%d", st.Children)
		line("memory kilobytes", "%d", st.MemKB)
		line("memory kilobytes total", "%d", st.MemKBTotal)
		line("memory percent", "%.1f%%", st.MemPct)
		line("memory percent total", "%.1f%%", st.MemPctTotal)
		line("cpu percent", "%.1f%%", st.CPUPct)
		line("cpu percent total", "%.1f%%", st.CPUPctTotal)
	}
	for _, p := range st.Pings {
		line("icmp response time", "%.3fs [Echo Request]", p.seconds())
	}
	for _, p := range ports(svc, st) {
		t := svc.Tests[p.Test]
		if t.Socket != "" {
			line("unix socket response time", "%.3fs to %s [%s]", p.seconds(), t.Socket, ProtocolName(t))
		} else {
			line("port response time", "%.3fs to %s:%d%s [%s via %s]", p.seconds(), t.Host, t.Port, t.Request,
				ProtocolName(t), PortType(t))
		}
	}
	if si := st.System; si != nil && svc.Type == monitrc.TypeSystem {
		line("load average", "[%.2f] [%.2f] [%.2f]", si.Load[0], si.Load[1], si.Load[2])
		line("cpu", "%.1f%%us %.1f%%sy %.1f%%wa", si.CPUUser, si.CPUSystem, si.CPUWait)
		line("memory usage", "%d kB [%.1f%%]", si.MemKB, si.MemPct)
		line("swap usage", "%d kB [%.1f%%]", si.SwapKB, si.SwapPct)
	}
}

// ports lists a service's connection tests in monit's order with their
// last results (none yet: not available).
func ports(svc *monitrc.Service, st UnitStatus) []PortResult {
	var out []PortResult
	for _, i := range connectionTests(svc) {
		r := PortResult{Test: i}
		for _, p := range st.Ports {
			if p.Test == i {
				r = p
			}
		}
		out = append(out, r)
	}
	return out
}

// seconds is the response time monit shows: 0 when not available.
func (p PortResult) seconds() float64 {
	if !p.OK {
		return 0
	}
	return p.Response.Seconds()
}
