package main

import (
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"time"
)

func defineMan(c *command) func([]string) error {
	return func(pos []string) error {
		writeMan(os.Stdout)
		return nil
	}
}

// manLists are what the FILES and ENVIRONMENT sections list.
func manLists() (files, env [][2]string) {
	files = [][2]string{
		{"ROOT/jobs/JOB/config/bpm.yml", "each job's configuration, read as bpm reads it"},
		{"ROOT/sys/run/bpm/JOB/PROC.pid", "the pid file: the pid of the process's init, which forwards signals to the executable"},
		{"ROOT/sys/log/JOB/PROC.stdout.log, PROC.stderr.log", "the process's output, appended"},
		{"ROOT/sys/run/vigil/vigil.sock", "the control socket (mode 0600): the API the commands use (docs/API.md)"},
		{"ROOT/sys/run/vigil/stopped.json", "the processes an operator stopped, kept stopped by the next daemon"},
	}
	env = [][2]string{
		{"VIGIL_ROOT", "the BOSH root when --root is not given (default /var/vcap)"},
		{"VIGIL_ISOLATION", "off runs processes without bpm's isolation (tests, debugging); each then carries a warning"},
		{"VIGIL_CONTAINER_NAME", "vigil container and drain --wait-all: this container's name in the pod"},
		{"NO_COLOR", "set: no colour in vigil status and vigil top on a terminal"},
	}
	return files, env
}

// writeMan writes vigil's manual page in roff (man(7)), from the same
// command definitions as help and completion.
func writeMan(w io.Writer) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
	files, env := manLists()
	p(`.TH VIGIL 8 %s "vigil %s" "System Manager's Manual"`, manDate(), vigilVersion())
	p(".SH NAME\nvigil \\- supervise the processes of BOSH jobs")
	p(".SH SYNOPSIS\n.B vigil\n.I command\n.RI [ flags ]\n.RI [ args ]")
	p(".SH DESCRIPTION")
	p("%s", manText(`vigil supervises the processes of Cloud Foundry BOSH jobs. It reads each job's bpm.yml as bpm does, runs every process under a small per-process init whose pid is in bpm's pid file, restarts a process the moment it exits (backing off when it crashes again quickly), and stops processes with bpm's ladder: the shutdown signal, SIGQUIT 15 s later, then SIGKILL to the whole tree 2 s after that.

Run as bpm or monit (vigil install makes the links), it answers as bpm 1.4 and monit 5.2.5 do. The commands below talk to the daemon through its control socket. Those that read a BOSH root take --root DIR (default $VIGIL_ROOT, else /var/vcap), before or after the command; every command takes -h or --help. A command, flag, job, process or signal that matches nothing is answered with the closest name ("did you mean"), or the names.`))
	p(".SH COMMANDS")
	for _, s := range visibleCommands() {
		writeManCommand(w, &s)
	}
	p(".SH EXIT STATUS")
	p("%s", manText("The commands of vigil's own exit as follows; each command's section lists those it gives and what each means there. The bpm and monit personalities keep bpm's and monit's exit statuses."))
	for _, e := range exitTable() {
		p(".TP\n.B %d\n%s", e.code, manText(e.meaning))
	}
	p(".SH ENVIRONMENT")
	for _, e := range env {
		p(".TP\n.B %s\n%s", e[0], manText(e[1]))
	}
	p(".SH FILES")
	for _, f := range files {
		p(".TP\n.I %s\n%s", manEscape(f[0]), manText(f[1]))
	}
	p(".SH SEE ALSO\n.BR bpm (1),\n.BR monit (1),\n.BR systemctl (1)")
}

// manDate is the page's date: the day of the commit the binary was built
// from, else of the build.
func manDate() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if t, err := time.Parse(time.RFC3339, s.Value); s.Key == "vcs.time" && err == nil {
				return t.Format(time.DateOnly)
			}
		}
	}
	return time.Now().Format(time.DateOnly)
}

// writeManCommand writes one command's section: its synopsis, what it
// does, its flags and its exit statuses.
func writeManCommand(w io.Writer, s *spec) {
	c := s.defined()
	fmt.Fprintf(w, ".SS \"%s\"\n%s\n", manEscape(s.synopsis()), manText(s.about))
	if s.own == nil {
		for _, f := range c.flags {
			fmt.Fprintf(w, ".TP\n.B \"%s\"\n%s\n", manEscape(strings.TrimSpace(flagNames(f))), manText(flagUsage(f)))
		}
	}
	fmt.Fprint(w, ".PP\nExit status:\n.RS\n")
	for _, e := range exitsOf(s) {
		fmt.Fprintf(w, ".TP\n.B %d\n%s\n", e.code, manText(e.meaning))
	}
	fmt.Fprint(w, ".RE\n")
}

// manText is text as roff paragraphs: escaped, one sentence's words per
// line as written, paragraphs separated by .PP.
func manText(text string) string {
	paras := strings.Split(strings.TrimSpace(text), "\n\n")
	for i, para := range paras {
		paras[i] = manEscape(strings.Join(strings.Fields(para), " "))
	}
	return strings.Join(paras, "\n.PP\n")
}

// manEscape escapes what roff would read as its own: backslashes, hyphens
// (so that options stay minus signs) and a leading dot or quote.
func manEscape(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	s = strings.ReplaceAll(s, "-", `\-`)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}
