package monit

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"strings"
	"time"

	"github.com/vigil-bosh/vigil/internal/monit/monitrc"
)

// Version is the monit version vigil answers as.
const Version = "5.2.5"

// Host describes the machine for the XML's server and platform blocks.
type Host struct {
	ID       string // monit's id: any stable token
	Hostname string
	Now      time.Time
	Platform *Platform // nil: this machine's
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
// _status2 pages (format=xml, xml.c), encoded as ISO-8859-1.
func StatusXML(e *Engine, h Host) []byte {
	var s strings.Builder
	cfg := e.Config()
	fmt.Fprintf(&s, "<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>")
	fmt.Fprintf(&s, "<monit id=\"%s\" incarnation=\"%d\" version=\"%s\">", esc(h.ID), e.Incarnation(), Version)
	fmt.Fprintf(&s, "<server><uptime>%d</uptime><poll>%d</poll><startdelay>0</startdelay>"+
		"<localhostname>%s</localhostname><controlfile>%s</controlfile>",
		int64(h.Now.Sub(e.Started()).Seconds()), int(cfg.Cycle.Seconds()), esc(h.Hostname), esc(cfg.File))
	if cfg.HTTPD != nil {
		fmt.Fprintf(&s, "<httpd><address>%s</address><port>%d</port><ssl>0</ssl></httpd>",
			esc(cfg.HTTPD.Address), cfg.HTTPD.Port)
	}
	p := h.Platform
	if p == nil {
		p = ThisPlatform()
	}
	fmt.Fprintf(&s, "</server><platform><name>%s</name><release>%s</release><version>%s</version>"+
		"<machine>%s</machine><cpu>%d</cpu><memory>%d</memory><swap>%d</swap></platform>",
		esc(p.Name), esc(p.Release), esc(p.Version), esc(p.Machine), p.CPUs, p.MemKB, p.SwapKB)
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
	s.WriteString("</servicegroups></monit>")
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
		"<collected_usec>%d</collected_usec><status>%d</status><status_hint>%d</status_hint>"+
		"<monitor>%d</monitor><monitormode>%d</monitormode><pendingaction>%d</pendingaction>",
		esc(svc.Name), int(svc.Type), collected.Unix(), collected.Nanosecond()/1000, st.Events, st.Hints,
		st.Monitor, modeCode(svc.Mode), e.Pending(svc.Name))
	if st.Events != 0 && st.Message != "" {
		fmt.Fprintf(s, "<status_message><![CDATA[%s]]></status_message>",
			strings.ReplaceAll(st.Message, "]]>", "]]&gt;"))
	}
	if hasDetails(st) {
		writeDetails(s, svc, st)
	}
	s.WriteString("</service>")
}

// writeDetails writes the figures of a service's type, in monit's order.
func writeDetails(s *strings.Builder, svc *monitrc.Service, st UnitStatus) {
	if f := st.File; f != nil {
		fmt.Fprintf(s, "<mode>%o</mode><uid>%d</uid><gid>%d</gid>", f.Mode, f.UID, f.GID)
		if svc.Type != monitrc.TypeFilesystem {
			fmt.Fprintf(s, "<timestamp>%d</timestamp>", f.Timestamp.Unix())
		}
		if svc.Type == monitrc.TypeFile {
			fmt.Fprintf(s, "<size>%d</size>", f.Size)
			if f.Checksum != "" {
				fmt.Fprintf(s, "<checksum type=\"%s\">%s</checksum>", f.Hash, f.Checksum)
			}
		}
		if fs := f.FS; fs != nil {
			mb := func(blocks int64) float64 { return float64(blocks) / 1048576 * float64(fs.BlockSize) }
			fmt.Fprintf(s, "<flags>%d</flags><block><percent>%.1f</percent><usage>%.1f MB</usage><total>%.1f MB</total></block>",
				fs.Flags, fs.SpacePercent, mb(fs.SpaceUsedBlocks), mb(fs.Blocks))
			if fs.Files > 0 {
				fmt.Fprintf(s, "<inode><percent>%.1f</percent><usage>%d</usage><total>%d</total></inode>",
					fs.InodePercent, fs.InodesUsed, fs.Files)
			}
		}
	}
	if svc.Type == monitrc.TypeProcess && st.Running {
		fmt.Fprintf(s, "<pid>%d</pid><ppid>%d</ppid><uptime>%d</uptime><children>%d</children>"+
			"<memory><percent>%.1f</percent><percenttotal>%.1f</percenttotal>"+
			"<kilobyte>%d</kilobyte><kilobytetotal>%d</kilobytetotal></memory>"+
			"<cpu><percent>%.1f</percent><percenttotal>%.1f</percenttotal></cpu>",
			st.PID, st.PPID, int64(st.Uptime.Seconds()), st.Children, st.MemPct, st.MemPctTotal,
			st.MemKB, st.MemKBTotal, st.CPUPct, st.CPUPctTotal)
	}
	for _, p := range st.Pings {
		rt := -1.0
		if p.OK {
			rt = p.Response.Seconds()
		}
		fmt.Fprintf(s, "<icmp><type>Echo Request</type><responsetime>%.3f</responsetime></icmp>", rt)
	}
	for _, p := range ports(svc, st) {
		t := svc.Tests[p.Test]
		rt := -1.0
		if p.OK {
			rt = p.Response.Seconds()
		}
		if t.Socket != "" {
			fmt.Fprintf(s, "<unix><path>%s</path><protocol>%s</protocol><responsetime>%.3f</responsetime></unix>",
				esc(t.Socket), ProtocolName(t), rt)
			continue
		}
		fmt.Fprintf(s, "<port><hostname>%s</hostname><portnumber>%d</portnumber><request>%s</request>"+
			"<protocol>%s</protocol><type>%s</type><responsetime>%.3f</responsetime></port>",
			esc(t.Host), t.Port, esc(t.Request), ProtocolName(t), PortType(t), rt)
	}
	if si := st.System; si != nil && svc.Type == monitrc.TypeSystem {
		fmt.Fprintf(s, "<system><load><avg01>%.2f</avg01><avg05>%.2f</avg05><avg15>%.2f</avg15></load>"+
			"<cpu><user>%.1f</user><system>%.1f</system><wait>%.1f</wait></cpu>"+
			"<memory><percent>%.1f</percent><kilobyte>%d</kilobyte></memory>"+
			"<swap><percent>%.1f</percent><kilobyte>%d</kilobyte></swap></system>",
			si.Load[0], si.Load[1], si.Load[2], si.CPUUser, si.CPUSystem, si.CPUWait, si.MemPct, si.MemKB,
			si.SwapPct, si.SwapKB)
	}
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

type group struct {
	name    string
	members []string
}

// groups lists the service groups and their members in reverse order of
// appearance, as monit prepends each new group and each member.
func groups(cfg *monitrc.Config) []group {
	var out []*group
	idx := map[string]*group{}
	for _, svc := range cfg.Services {
		for _, g := range svc.Groups {
			k := strings.ToLower(g)
			gr, ok := idx[k]
			if !ok {
				gr = &group{name: g}
				idx[k] = gr
				out = append([]*group{gr}, out...)
			}
			gr.members = append([]string{svc.Name}, gr.members...)
		}
	}
	res := make([]group, len(out))
	for i, g := range out {
		res[i] = *g
	}
	return res
}
