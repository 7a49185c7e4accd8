package monitdiff

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// indentXML prints a status document one element per line, indented, so
// that transcripts can be read and compared line by line. Each leaf is one
// line: <name>text</name>.
func indentXML(doc []byte) (string, error) {
	d := xml.NewDecoder(bytes.NewReader(doc))
	d.CharsetReader = func(_ string, r io.Reader) (io.Reader, error) { return r, nil } // ISO-8859-1: bytes as they are
	var b strings.Builder
	depth := 0
	var open *xml.StartElement // the element whose first child is not known yet
	var text string
	flushOpen := func() {
		if open != nil {
			fmt.Fprintf(&b, "%s%s\n", strings.Repeat("  ", depth-1), startTag(*open))
			open = nil
		}
	}
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", fmt.Errorf("status xml: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			flushOpen()
			c := t.Copy()
			open, text = &c, ""
			depth++
		case xml.CharData:
			text += string(t)
		case xml.EndElement:
			depth--
			if open != nil { // a leaf
				fmt.Fprintf(&b, "%s%s%s</%s>\n", strings.Repeat("  ", depth), startTag(*open), text, t.Name.Local)
				open = nil
			} else {
				fmt.Fprintf(&b, "%s</%s>\n", strings.Repeat("  ", depth), t.Name.Local)
			}
			text = ""
		}
	}
	return b.String(), nil
}

func startTag(e xml.StartElement) string {
	var b strings.Builder
	b.WriteString("<" + e.Name.Local)
	for _, a := range e.Attr {
		fmt.Fprintf(&b, " %s=%q", a.Name.Local, a.Value)
	}
	b.WriteString(">")
	return b.String()
}

// What legitimately varies between runs, and is normalised: process ids,
// uptimes, times and dates, memory and CPU figures, the machine's load and
// its description, monit's id and incarnation, the host name, the root
// directory, and the ports the harness picked. Each rule replaces the
// varying part with a fixed word; everything else is compared as it is.
var (
	dates = regexp.MustCompile(`[A-Z][a-z]{2} [A-Z][a-z]{2} [ 0-9]\d \d\d:\d\d:\d\d \d{4}`)
	// `monit status` lines whose value varies.
	statusVary = regexp.MustCompile(`^(\s+(?:pid|parent pid|uptime|memory kilobytes|memory kilobytes total|` +
		`memory percent|memory percent total|cpu percent|cpu percent total|load average|cpu|` +
		`memory usage|swap usage|filesystem flags|block size|blocks total|blocks free for non superuser|` +
		`blocks free total|inodes total|inodes free)\s{2,})\S.*$`)
	responseTime = regexp.MustCompile(`^(\s+(?:port|unix socket|icmp) response time +)\d+\.\d+s`)
	uptimeHeader = regexp.MustCompile(`^(\s*The Monit daemon 5\.2\.5 uptime: ).*$`)
	// Status XML leaves whose text varies.
	xmlVary = regexp.MustCompile(`^(\s*<(?:uptime|collected_sec|collected_usec|pid|ppid|percent|percenttotal|` +
		`kilobyte|kilobytetotal|avg01|avg05|avg15|user|system|wait|timestamp|release|version|machine|cpu|` +
		`memory|swap|localhostname|flags|usage|total)>)[^<]*(</)`)
	xmlResponse = regexp.MustCompile(`^(\s*<responsetime>)\d+\.\d+(</responsetime>)`)
	monitAttrs  = regexp.MustCompile(`<monit id="[^"]*" incarnation="[^"]*"`)
	runningPid  = regexp.MustCompile(`(running with pid) \d+`)
	// A resource test's message holds the figure it saw.
	figure = regexp.MustCompile(` of \d+(\.\d+)?(kB|%)? matches resource limit`)
)

// normal is the transcript with what varies replaced.
func (r *run) normal() string {
	s := r.out.String()
	s = strings.ReplaceAll(s, r.root, "ROOT")
	if h, err := os.Hostname(); err == nil && h != "" {
		s = strings.ReplaceAll(s, "system_"+h, "system_HOST")
		s = strings.ReplaceAll(s, "<localhostname>"+h+"<", "<localhostname>HOST<")
	}
	s = normalizeLines(s)
	// Ports last, by name, longest number first so no port is a part of
	// another's replacement.
	names := make([]string, 0, len(r.ports))
	for n := range r.ports {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return r.ports[names[i]] > r.ports[names[j]] })
	for _, n := range names {
		re := regexp.MustCompile(`\b` + strconv.Itoa(r.ports[n]) + `\b`)
		s = re.ReplaceAllString(s, "PORT_"+n)
	}
	return s
}

// normalizeLines replaces, line by line, what varies between runs. It
// applies to a recorded transcript again harmlessly (the test does, so a
// recording made before a rule was added still compares).
func normalizeLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		l = dates.ReplaceAllString(l, "DATE")
		l = statusVary.ReplaceAllString(l, "${1}-")
		l = responseTime.ReplaceAllString(l, "${1}-s")
		l = uptimeHeader.ReplaceAllString(l, "${1}-")
		l = xmlVary.ReplaceAllString(l, "${1}-${2}")
		l = xmlResponse.ReplaceAllString(l, "${1}-${2}")
		l = monitAttrs.ReplaceAllString(l, `<monit id="-" incarnation="-"`)
		l = runningPid.ReplaceAllString(l, "$1 -")
		l = figure.ReplaceAllString(l, " of -$2 matches resource limit")
		lines[i] = l
	}
	return strings.Join(lines, "\n")
}
