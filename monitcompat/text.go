package monitcompat

import (
	"fmt"
	"strings"
	"time"

	"github.com/vigil-bosh/vigil/monitrc"
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

// eventTexts are the failure texts in monit's table order (event.c).
var eventTexts = []struct {
	bit  int
	text string
}{
	{EventConnection, "Connection failed"},
	{EventExec, "Execution failed"},
	{EventNonexist, "Does not exist"},
	{EventResource, "Resource limit matched"},
	{EventTimeout, "Timeout"},
}

// StatusWord is a service's status as monit summary prints it.
func StatusWord(svc *monitrc.Service, st UnitStatus, pending int) string {
	var w string
	switch {
	case st.Monitor == NotMonitored:
		w = "not monitored"
	case st.Monitor == Initializing:
		w = "initializing"
	case st.Events != 0:
		w = "failed"
		for _, e := range eventTexts {
			if st.Events&e.bit != 0 {
				w = e.text
				break
			}
		}
	default:
		switch svc.Type {
		case monitrc.TypeProcess, monitrc.TypeSystem:
			w = "running"
		case monitrc.TypeHost:
			w = "online with all services"
		default:
			w = "accessible"
		}
	}
	if pending != PendingNone {
		w += " - " + actionName(pending) + " pending"
	}
	return w
}

func header(e *Engine, now time.Time) string {
	return "The Monit daemon " + Version + " uptime: " + Uptime(now.Sub(e.Started())) + "\n\n"
}

func systemName(hostname string) string { return "system_" + hostname }

// Summary renders monit summary.
func Summary(e *Engine, h Host) string {
	var b strings.Builder
	b.WriteString(header(e, h.Now))
	for _, svc := range e.Config().Services {
		name := svc.Type.Word() + " '" + svc.Name + "'"
		fmt.Fprintf(&b, "%-35s %s\n", name, StatusWord(svc, statusOf(e, svc), e.Pending(svc.Name)))
	}
	fmt.Fprintf(&b, "%-35s %s\n", "System '"+systemName(h.Hostname)+"'", "running")
	return b.String()
}

// FullStatus renders monit status.
func FullStatus(e *Engine, h Host) string {
	var b strings.Builder
	b.WriteString(header(e, h.Now))
	line := func(k, v string) { fmt.Fprintf(&b, "  %-33s %s\n", k, v) }
	for _, svc := range e.Config().Services {
		st := statusOf(e, svc)
		collected := st.Collected
		if collected.IsZero() {
			collected = h.Now
		}
		fmt.Fprintf(&b, "%s '%s'\n", svc.Type.Word(), svc.Name)
		line("status", StatusWord(svc, st, e.Pending(svc.Name)))
		line("monitoring status", [...]string{"not monitored", "monitored", "initializing"}[st.Monitor])
		if svc.Type == monitrc.TypeProcess && st.Running && st.Monitor != NotMonitored {
			line("pid", fmt.Sprint(st.PID))
			line("parent pid", fmt.Sprint(st.PPID))
			line("uptime", Uptime(st.Uptime))
			line("children", fmt.Sprint(st.Children))
			line("memory kilobytes", fmt.Sprint(st.MemKB))
			line("memory kilobytes total", fmt.Sprint(st.MemKBTotal))
			line("memory percent", fmt.Sprintf("%.1f%%", st.MemPct))
			line("memory percent total", fmt.Sprintf("%.1f%%", st.MemPctTotal))
			line("cpu percent", fmt.Sprintf("%.1f%%", st.CPUPct))
			line("cpu percent total", fmt.Sprintf("%.1f%%", st.CPUPctTotal))
		}
		for _, t := range svc.Tests {
			switch {
			case (t.Kind == monitrc.TestConnection || t.Kind == monitrc.TestResource) && !t.Enforced():
				line("test", "not yet enforced: if "+t.Text+" then "+string(t.Action.Kind))
			case t.Kind == monitrc.TestConnection || t.Kind == monitrc.TestResource:
				line("test", "if "+t.Text+" then "+string(t.Action.Kind))
			}
		}
		line("data collected", collected.Format("Mon Jan _2 15:04:05 2006"))
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "System '%s'\n", systemName(h.Hostname))
	line("status", "running")
	line("monitoring status", "monitored")
	line("data collected", h.Now.Format("Mon Jan _2 15:04:05 2006"))
	b.WriteString("\n")
	return b.String()
}
