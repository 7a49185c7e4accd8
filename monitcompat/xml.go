package monitcompat

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"strings"
	"time"

	"github.com/vigil-bosh/vigil/monitrc"
)

// Version is the monit version vigil answers as.
const Version = "5.2.5"

// Host describes the machine for the XML's server and platform blocks.
type Host struct {
	ID       string // monit's id: any stable token
	Hostname string
	Now      time.Time
}

// latin1 replaces what ISO-8859-1 cannot encode, since the document says
// it is ISO-8859-1 (the agent decodes it with a charset-aware reader).
func latin1(s string) string {
	return strings.Map(func(r rune) rune {
		if r > 0xff {
			return '?'
		}
		return r
	}, s)
}

func esc(s string) string {
	var b bytes.Buffer
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// writeLatin1 writes s encoded as ISO-8859-1.
func writeLatin1(b *bytes.Buffer, s string) {
	for _, r := range latin1(s) {
		b.WriteByte(byte(r))
	}
}

// StatusXML renders the status document of monit 5.2.5's _status and
// _status2 pages (format=xml), encoded as ISO-8859-1.
func StatusXML(e *Engine, h Host) []byte {
	var s strings.Builder
	cfg := e.Config()
	fmt.Fprintf(&s, "<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>\n")
	fmt.Fprintf(&s, "<monit id=\"%s\" incarnation=\"%d\" version=\"%s\">", esc(h.ID), e.Incarnation(), Version)
	addr, port := "", 0
	if cfg.HTTPD != nil {
		addr, port = cfg.HTTPD.Address, cfg.HTTPD.Port
	}
	fmt.Fprintf(&s, "<server><uptime>%d</uptime><poll>%d</poll><startdelay>0</startdelay>"+
		"<localhostname>%s</localhostname><controlfile>%s</controlfile>"+
		"<httpd><address>%s</address><port>%d</port><ssl>0</ssl></httpd></server>",
		int64(h.Now.Sub(e.Started()).Seconds()), int(cfg.Cycle.Seconds()), esc(h.Hostname),
		esc(cfg.File), esc(addr), port)
	fmt.Fprintf(&s, "<platform><name>Linux</name></platform>")
	s.WriteString("<services>")
	for _, svc := range cfg.Services {
		writeService(&s, e, svc, h.Now)
	}
	s.WriteString("</services><servicegroups>")
	for _, g := range groups(cfg) {
		fmt.Fprintf(&s, "<servicegroup name=\"%s\">", esc(g.name))
		for _, m := range g.members {
			fmt.Fprintf(&s, "<service>%s</service>", esc(m))
		}
		s.WriteString("</servicegroup>")
	}
	s.WriteString("</servicegroups></monit>\n")
	var b bytes.Buffer
	writeLatin1(&b, s.String())
	return b.Bytes()
}

func writeService(s *strings.Builder, e *Engine, svc *monitrc.Service, now time.Time) {
	st := statusOf(e, svc)
	collected := st.Collected
	if collected.IsZero() {
		collected = now
	}
	fmt.Fprintf(s, "<service name=\"%s\"><type>%d</type><collected_sec>%d</collected_sec>"+
		"<collected_usec>%d</collected_usec><status>%d</status><status_hint>0</status_hint>"+
		"<monitor>%d</monitor><monitormode>%d</monitormode><pendingaction>%d</pendingaction>",
		esc(svc.Name), int(svc.Type), collected.Unix(), collected.Nanosecond()/1000, st.Events,
		st.Monitor, modeCode(svc.Mode), e.Pending(svc.Name))
	if st.Events != 0 && st.Message != "" {
		fmt.Fprintf(s, "<status_message><![CDATA[%s]]></status_message>",
			strings.ReplaceAll(st.Message, "]]>", "]]&gt;"))
	}
	if svc.Type == monitrc.TypeProcess && st.Running && st.Monitor != NotMonitored {
		fmt.Fprintf(s, "<pid>%d</pid><ppid>%d</ppid><uptime>%d</uptime><children>%d</children>"+
			"<memory><percent>%.1f</percent><percenttotal>%.1f</percenttotal>"+
			"<kilobyte>%d</kilobyte><kilobytetotal>%d</kilobytetotal></memory>"+
			"<cpu><percent>%.1f</percent><percenttotal>%.1f</percenttotal></cpu>",
			st.PID, st.PPID, int64(st.Uptime.Seconds()), st.Children, st.MemPct, st.MemPctTotal,
			st.MemKB, st.MemKBTotal, st.CPUPct, st.CPUPctTotal)
	}
	s.WriteString("</service>")
}

func modeCode(m string) int {
	switch m {
	case "passive":
		return 1
	case "manual":
		return 2
	}
	return 0
}

// statusOf returns a service's status; a service without a unit (nothing
// runs it) is not monitored.
func statusOf(e *Engine, svc *monitrc.Service) UnitStatus {
	if u, ok := e.Unit(svc.Name); ok {
		return u.Status()
	}
	return UnitStatus{}
}

type group struct {
	name    string
	members []string
}

// groups lists the service groups in order of first appearance; members
// are in reverse config order, as monit prepends them.
func groups(cfg *monitrc.Config) []group {
	var out []group
	idx := map[string]int{}
	for _, svc := range cfg.Services {
		for _, g := range svc.Groups {
			k := strings.ToLower(g)
			i, ok := idx[k]
			if !ok {
				i = len(out)
				idx[k] = i
				out = append(out, group{name: g})
			}
			out[i].members = append([]string{svc.Name}, out[i].members...)
		}
	}
	return out
}
