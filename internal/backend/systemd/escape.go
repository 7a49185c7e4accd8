package systemd

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/vigil-bosh/vigil/internal/supervise"
)

// Escape escapes s as systemd-escape does for one component of a unit name:
// ASCII letters, digits, ':', '_' and '.' (except a leading '.') stay, '/'
// becomes '-', and every other byte becomes \xNN. A '-' is therefore never
// ambiguous: in "vigil-JOB-PROC" it only ever separates the parts.
func Escape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '/':
			b.WriteByte('-')
		case c == '.' && i == 0, !plain(c):
			fmt.Fprintf(&b, `\x%02x`, c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func plain(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == ':' || c == '_' || c == '.'
}

// ServiceName is the unit of one process: vigil-JOB-PROC.service.
func ServiceName(jobName, procName string) string {
	return "vigil-" + Escape(jobName) + "-" + Escape(procName) + ".service"
}

// serviceID is the inverse of ServiceName: the job and process a service's
// unit name stands for, and false for any other name.
func serviceID(unit string) (supervise.ID, bool) {
	rest, ok := strings.CutPrefix(unit, "vigil-")
	if !ok {
		return supervise.ID{}, false
	}
	rest, ok = strings.CutSuffix(rest, ".service")
	j, p, two := strings.Cut(rest, "-")
	if !ok || !two {
		return supervise.ID{}, false
	}
	id := supervise.ID{Job: unescape(j), Process: unescape(p)}
	if ServiceName(id.Job, id.Process) != unit { // escaped otherwise: not one of ours
		return supervise.ID{}, false
	}
	return id, true
}

// unescape undoes Escape's \xNN (a '-' never stands in a name part).
func unescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && s[i+1] == 'x' {
			if n, err := strconv.ParseUint(s[i+2:i+4], 16, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// TargetName is the unit grouping the processes of one job: vigil-JOB.target.
func TargetName(jobName string) string { return "vigil-" + Escape(jobName) + ".target" }

// quote makes s one word of a unit file value in double quotes: backslash,
// quote and control characters are C-escaped, '%' is doubled (specifiers)
// and, with exec set (command lines), '$' too (variable expansion).
func quote(s string, exec bool) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' || c == '"':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\t':
			b.WriteString(`\t`)
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, c)
		case c == '%':
			b.WriteString("%%")
		case c == '$' && exec:
			b.WriteString("$$")
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// command joins argv into an Exec line, each word quoted.
func command(prefix string, argv ...string) string {
	words := make([]string, len(argv))
	for i, a := range argv {
		words[i] = quote(a, true)
	}
	return prefix + strings.Join(words, " ")
}
