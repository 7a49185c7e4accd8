package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// spec defines one command of the vigil command line. The one table of
// specs (commands) drives dispatch, per-command help, usage errors, shell
// completion and the man page.
type spec struct {
	name    string // as typed: "start", "systemd generate"
	args    string // the positional arguments of the synopsis: "JOB", "[PATH...]"
	summary string // one line for the command list
	about   string // what it does, for --help and the man page; paragraphs separated by blank lines
	// ok says what exit status 0 means, when more than "success"; exits
	// are the statuses it gives besides 0 and 2, each with what it means
	// for this command (see exitsOf).
	ok     string
	exits  []exitStatus
	noRoot bool // takes no --root: it reads no BOSH root
	// define registers the command's flags on c and returns what runs it
	// with its positional arguments.
	define func(c *command) func(pos []string) error
	// own, instead of define, is a command that parses its arguments
	// itself (the bpm and monit personalities).
	own func(args []string) error
	// complete says what each positional argument completes to (see
	// completions); the last one repeats when args ends with "...".
	complete []string
	hidden   bool // left out of help, completion and the man page
}

// errHelp is a request for a command's help (-h, --help).
var errHelp = errors.New("help requested")

// synopsis is the command's usage line: "vigil start [flags] JOB".
func (s *spec) synopsis() string {
	line := "vigil " + s.name
	if s.own == nil {
		line += " [flags]"
	}
	if s.args != "" {
		line += " " + s.args
	}
	return line
}

// usagef is a usage error of c: the one line that says what is wrong,
// then the command's usage line, exit status 2.
func (c *command) usagef(format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	return &exitError{code: exitUsage, bare: true, err: fmt.Errorf("vigil %s: %s\nusage: %s\nRun 'vigil %s --help' for more.",
		c.spec.name, msg, c.spec.synopsis(), c.spec.name)}
}

// writeHelp prints the help of the command c defines: usage line, what it
// does, its flags with their descriptions, its exit statuses.
func writeHelp(w io.Writer, c *command) {
	s := c.spec
	fmt.Fprintf(w, "usage: %s\n\n", s.synopsis())
	fmt.Fprintf(w, "%s\n", wrapText(s.about, 78, ""))
	if s.own == nil {
		fmt.Fprint(w, "\nFlags:\n")
		rows := [][2]string{}
		for _, f := range c.flags {
			rows = append(rows, [2]string{flagNames(f), flagUsage(f)})
		}
		rows = append(rows, [2]string{"-h, --help", "show this help"})
		width := 0
		for _, r := range rows {
			width = max(width, len(r[0]))
		}
		for _, r := range rows {
			fmt.Fprintf(w, "  %-*s  %s\n", width, r[0], wrapText(r[1], 74-width, strings.Repeat(" ", width+4)))
		}
	}
	fmt.Fprint(w, "\nExit status:\n")
	for _, e := range exitsOf(s) {
		fmt.Fprintf(w, "  %-3d  %s\n", e.code, wrapText(e.meaning, 71, "       "))
	}
}

// flagNames is "-p, --process PROC", or "    --wait WHAT" for a flag
// without a one-letter name.
func flagNames(f flagDef) string {
	var short, long []string
	for _, n := range f.names {
		if len(n) == 1 {
			short = append(short, "-"+n)
		} else {
			long = append(long, "--"+n)
		}
	}
	names := strings.Join(append(short, long...), ", ")
	if len(short) == 0 {
		names = "    " + names
	}
	if !f.isBool {
		names += " " + flagValueName(f)
	}
	return names
}

// flagValueName is the name of a flag's value: the back-quoted word of its
// usage, else its type (DURATION, INT), else VALUE.
func flagValueName(f flagDef) string {
	name, _ := flag.UnquoteUsage(&flag.Flag{Usage: f.usage, Value: &textValue{}})
	if name == "value" && f.kind != "" && f.kind != "string" {
		name = f.kind
	}
	if name == "" || name == "value" || name == "string" {
		return "VALUE"
	}
	return strings.ToUpper(name)
}

// flagUsage is a flag's description without the back quotes, with its
// default.
func flagUsage(f flagDef) string {
	_, u := flag.UnquoteUsage(&flag.Flag{Usage: f.usage, Value: &textValue{}})
	if f.def != "" {
		u += " (default " + f.def + ")"
	}
	return u
}

// textValue is a flag.Value for UnquoteUsage, which asks only its type.
type textValue struct{}

func (*textValue) String() string   { return "" }
func (*textValue) Set(string) error { return nil }

// wrapText wraps text at width columns, each line after the first
// prefixed with indent; blank lines separate paragraphs and are kept.
func wrapText(text string, width int, indent string) string {
	var b strings.Builder
	for i, para := range strings.Split(strings.TrimSpace(text), "\n\n") {
		if i > 0 {
			b.WriteString("\n\n" + indent)
		}
		col := 0
		for j, word := range strings.Fields(para) {
			if j > 0 && col+1+len(word) > width {
				b.WriteString("\n" + indent)
				col = 0
			} else if j > 0 {
				b.WriteByte(' ')
				col++
			}
			b.WriteString(word)
			col += len(word)
		}
	}
	return b.String()
}

// writeCommandList prints vigil's usage: every command with its summary.
func writeCommandList(w io.Writer) {
	fmt.Fprint(w, "usage: vigil COMMAND [flags] [args]\n\nCommands:\n")
	cmds := visibleCommands()
	width := 0
	for _, s := range cmds {
		width = max(width, len(s.name))
	}
	for _, s := range cmds {
		fmt.Fprintf(w, "  %-*s  %s\n", width, s.name, s.summary)
	}
	fmt.Fprint(w, "\nThe commands that read a BOSH root take --root DIR (default $VIGIL_ROOT, else /var/vcap), before or\nafter the command. Every command takes -h or --help.\n"+
		"Run 'vigil COMMAND --help' for a command's flags and exit statuses, 'vigil man' for the manual.\n")
}
