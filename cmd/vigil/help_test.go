package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// runSplit runs the vigil binary with args and returns its stdout, its
// stderr and its exit status.
func runSplit(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(vigilBin, args...)
	var out, errs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errs
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return out.String(), errs.String(), code
}

// TestHelpOfEveryCommand: `vigil CMD --help` prints the command's usage
// line, what it does, every flag it defines with its description, and its
// exit statuses, on stdout with status 0; `vigil help CMD` is the same.
func TestHelpOfEveryCommand(t *testing.T) {
	for _, s := range visibleCommands() {
		if s.own != nil {
			continue // bpm and monit answer --help as bpm and monit do
		}
		out, errs, code := runSplit(t, append(strings.Fields(s.name), "--help")...)
		if code != 0 || errs != "" || !strings.HasPrefix(out, "usage: "+s.synopsis()+"\n") {
			t.Errorf("%s --help: %d %q\n%s", s.name, code, errs, out)
			continue
		}
		c := s.defined()
		for _, f := range c.flags {
			if f.usage == "" {
				t.Errorf("%s: flag %v has no description", s.name, f.names)
			}
			line := regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(strings.TrimLeft(flagNames(f), " ")) + ` +\S`)
			if !line.MatchString(strings.ReplaceAll(out, "      --", "  --")) {
				t.Errorf("%s --help lacks its flag %s:\n%s", s.name, flagNames(f), out)
			}
			if first := strings.Fields(flagUsage(f))[0]; !strings.Contains(out, first) {
				t.Errorf("%s --help lacks the description of %s", s.name, flagNames(f))
			}
		}
		// Exactly its own statuses, each with its own wording; --root only
		// where it reads a root.
		_, section, _ := strings.Cut(out, "\nExit status:\n")
		var want strings.Builder
		for _, e := range exitsOf(&s) {
			fmt.Fprintf(&want, "  %-3d  %s\n", e.code, wrapText(e.meaning, 71, "       "))
		}
		if section != want.String() {
			t.Errorf("%s --help's exit statuses:\n%s\nwant\n%s", s.name, section, want.String())
		}
		if strings.Contains(out, "--root") == s.noRoot {
			t.Errorf("%s --help: --root listed %v, but the command reads a root: %v", s.name, !s.noRoot, !s.noRoot)
		}
		if again, _, _ := runSplit(t, append([]string{"help"}, strings.Fields(s.name)...)...); again != out {
			t.Errorf("vigil help %s differs from %s --help", s.name, s.name)
		}
	}
	if out, _, code := runSplit(t, "--help"); code != 0 || !strings.Contains(out, "\n  check ") {
		t.Errorf("vigil --help: %d\n%s", code, out)
	}
}

// TestUsageErrors: a usage error prints the one line that is wrong and the
// command's usage line (not the whole list of commands), status 2.
func TestUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args  []string
		first string
		usage string
	}{
		{[]string{"start"}, "vigil start: needs JOB|all", "usage: vigil start [flags] JOB|all"},
		{[]string{"start", "web", "--bogus"}, "vigil start: unknown flag --bogus (known flags: -p, --process, --wait, --timeout, --uptime, --all, --json, --root, --help)", "usage: vigil start [flags] JOB|all"},
		{[]string{"start", "web", "--wiat", "ready"}, `vigil start: unknown flag --wiat (did you mean "--wait"?)`, "usage: vigil start [flags] JOB|all"},
		{[]string{"status", "--jsn"}, `vigil status: unknown flag --jsn (did you mean "--json"?)`, "usage: vigil status [flags] [JOB[/PROC]...]"},
		{[]string{"status", "-jsn"}, `vigil status: unknown flag -jsn (did you mean "--json"?)`, "usage: vigil status [flags] [JOB[/PROC]...]"},
		{[]string{"start", "web", "--wait", "soon"}, "vigil start: --wait soon: want ready, running or none", "usage: vigil start [flags] JOB|all"},
		{[]string{"start", "web", "--wait", "redy"}, `vigil start: --wait redy: want ready, running or none (did you mean "ready"?)`, "usage: vigil start [flags] JOB|all"},
		{[]string{"start", "web", "--timeout", "5"}, "vigil start: --timeout 5: want a duration such as 5s, 90s or 1m30s", "usage: vigil start [flags] JOB|all"},
		{[]string{"start", "web", "--timeout=5"}, "vigil start: --timeout 5: want a duration such as 5s, 90s or 1m30s", "usage: vigil start [flags] JOB|all"},
		{[]string{"start", "web", "-p"}, "vigil start: -p needs a value: PROC", "usage: vigil start [flags] JOB|all"},
		{[]string{"start", "--all", "web"}, "vigil start: --all names every job: give it or web, not both", "usage: vigil start [flags] JOB|all"},
		{[]string{"start", "all", "-p", "a"}, "vigil start: -p names a process of one JOB, not of all", "usage: vigil start [flags] JOB|all"},
		{[]string{"logs", "web", "-n", "x"}, "vigil logs: -n x: want a whole number", "usage: vigil logs [flags] JOB"},
		{[]string{"logs", "web", "--since", "soon"}, "vigil logs: --since soon: want a duration ago such as 10m or 2h, or a time such as 15:04, 2006-01-02 15:04 or 2006-01-02T15:04:05Z07:00", "usage: vigil logs [flags] JOB"},
		{[]string{"signal", "web", "-p", "a", "SIGFOO"}, "vigil signal: unknown signal SIGFOO (known signals: HUP, INT, QUIT, ILL, TRAP, ABRT, BUS, FPE, KILL, USR1, SEGV, USR2, PIPE, ALRM, TERM, STKFLT and 15 more)", "usage: vigil signal [flags] JOB SIGNAL"},
		{[]string{"signal", "web", "-p", "a", "HPU"}, `vigil signal: unknown signal HPU (did you mean "HUP"?)`, "usage: vigil signal [flags] JOB SIGNAL"},
		{[]string{"status", "web/"}, `vigil status: "web/": want JOB or JOB/PROC`, "usage: vigil status [flags] [JOB[/PROC]...]"},
		{[]string{"reload", "now"}, `vigil reload: takes no arguments, got ["now"]`, "usage: vigil reload [flags]"},
		{[]string{"signal", "web", "HUP"}, "vigil signal: needs -p PROC", "usage: vigil signal [flags] JOB SIGNAL"},
		{[]string{"events", "-n", "-1"}, "vigil events: -n must not be negative", "usage: vigil events [flags]"},
	} {
		out, errs, code := runSplit(t, c.args...)
		lines := strings.Split(strings.TrimSuffix(errs, "\n"), "\n")
		if code != 2 || out != "" || len(lines) != 3 || lines[0] != c.first || lines[1] != c.usage ||
			lines[2] != "Run 'vigil "+c.args[0]+" --help' for more." {
			t.Errorf("%v: %d %q", c.args, code, errs)
		}
	}
	if _, errs, code := runSplit(t, "frobnicate"); code != 2 || !strings.HasPrefix(errs, "vigil: unknown command \"frobnicate\" (known commands: daemon, status, ") ||
		!strings.HasSuffix(errs, "\nRun 'vigil help' for the commands.\n") {
		t.Errorf("unknown command: %d %q", code, errs)
	}
	if _, errs, code := runSplit(t, "stpo", "web"); code != 2 || errs != "vigil: unknown command \"stpo\" (did you mean \"stop\"?)\nRun 'vigil help' for the commands.\n" {
		t.Errorf("a command misspelt: %d %q", code, errs)
	}
	if _, errs, code := runSplit(t); code != 2 || !strings.HasPrefix(errs, "usage: vigil COMMAND") {
		t.Errorf("no command: %d %q", code, errs)
	}
}

// TestArgCount reads the positional arguments a synopsis allows.
func TestArgCount(t *testing.T) {
	for args, want := range map[string][2]int{
		"": {0, 0}, "JOB": {1, 1}, "JOB SIGNAL": {2, 2}, "[COMMAND]": {0, 1},
		"[PATH...]": {0, -1}, "[JOB[/PROC]...]": {0, -1}, "live|ready": {1, 1},
	} {
		min, max := (&spec{args: args}).argCount()
		if want[1] < 0 {
			want[1] = max
			if max < 1<<30 {
				t.Errorf("%q: max %d, want unbounded", args, max)
			}
		}
		if min != want[0] || max != want[1] {
			t.Errorf("%q: %d..%d, want %v", args, min, max, want)
		}
	}
}

// TestManPage: vigil man is a manual page mandoc reads without a warning,
// with a section for every command and every flag of each.
func TestManPage(t *testing.T) {
	page, _, code := runSplit(t, "man")
	if code != 0 || !strings.HasPrefix(page, ".TH VIGIL 8") {
		t.Fatalf("vigil man: %d\n%s", code, page)
	}
	for _, s := range visibleCommands() {
		if !strings.Contains(page, `.SS "`+manEscape(s.synopsis())+`"`) {
			t.Errorf("no section for %s", s.name)
		}
		for _, f := range s.defined().flags {
			if !strings.Contains(page, `.B "`+manEscape(strings.TrimSpace(flagNames(f)))+`"`) {
				t.Errorf("%s: no entry for %s", s.name, flagNames(f))
			}
		}
	}
	for _, e := range exitTable() {
		if !strings.Contains(page, ".TP\n.B "+strconv.Itoa(e.code)+"\n") {
			t.Errorf("EXIT STATUS lacks %d", e.code)
		}
	}
	if _, err := exec.LookPath("mandoc"); err != nil {
		t.Skip("checking the page's roff needs mandoc (apt-get install mandoc)")
	}
	lint := exec.Command("mandoc", "-T", "lint", "-W", "warning")
	lint.Stdin = strings.NewReader(page)
	if out, err := lint.CombinedOutput(); err != nil || len(out) > 0 {
		t.Fatalf("mandoc -T lint: %v\n%s", err, out)
	}
	text := exec.Command("mandoc", "-T", "utf8")
	text.Stdin = strings.NewReader(page)
	raw, err := text.Output()
	out := regexp.MustCompile(".\x08").ReplaceAllString(string(raw), "") // overstrike: bold and underline
	if err != nil || !strings.Contains(out, "vigil start [flags] JOB") || !strings.Contains(out, "--wait WHAT") {
		t.Fatalf("mandoc -T utf8: %v\n%s", err, out)
	}
}

// TestCompletions asks the completion logic what the scripts would get.
func TestCompletions(t *testing.T) {
	c := newCLI(t) // job web with processes a and b
	getenv := func(k string) string {
		if k == "VIGIL_ROOT" {
			return c.root
		}
		return os.Getenv(k)
	}
	for _, tc := range []struct {
		line string // words; the last is the one completed ("" after a trailing space)
		want []string
	}{
		{"st", []string{"status", "start", "stop"}},
		{"syst", []string{"systemd"}},
		{"systemd ", []string{"generate"}},
		{"start ", []string{"web", "all"}},
		{"--root " + c.root + " stop ", []string{"web", "all"}}, // flags before the command
		{"--root=" + c.root + " stop web -p ", []string{"a", "b"}},
		{"--root ", []string{directiveDir}},
		{"--r", []string{"--root"}},
		{"start web -p ", []string{"a", "b"}},
		{"start web --process=", []string{"--process=a", "--process=b"}},
		{"start --w", []string{"--wait"}},
		{"start web --wait ", []string{"ready", "running", "none"}},
		{"stop web --wait ", []string{"stopped", "none"}},
		{"status web/", []string{"web/a", "web/b"}},
		{"signal web -p a HU", []string{"HUP"}},
		{"lifecycle pre-", []string{"pre-stop", "pre-start"}},
		{"daemon --backend ", []string{"auto", "native", "systemd"}},
		{"daemon --root ", []string{directiveDir}},
		{"check ", []string{directiveFile}},
		{"check a.yml ", []string{directiveFile}},
		{"completion ", []string{"bash", "zsh", "fish"}},
		{"help che", []string{"check"}},
		{"reload ", nil},
		{"start web ", nil},
		{"--root /nowhere start ", []string{"all"}}, // a root given on the line is the one read
	} {
		words := strings.Split(tc.line, " ")
		got := completions(words[:len(words)-1], words[len(words)-1], getenv)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%q: %q, want %q", tc.line, got, tc.want)
		}
	}
	if got := completions([]string{"start", "--root", c.root}, "", os.Getenv); !slices.Equal(got, []string{"web", "all"}) {
		t.Errorf("with --root on the line: %q", got)
	}
}

// TestExitTableInTheDocs: README and docs/COMPATIBILITY.md hold the exit
// statuses exactly as the commands' table gives them.
func TestExitTableInTheDocs(t *testing.T) {
	table := exitDocTable()
	for _, doc := range []string{"../../README.md", "../../docs/COMPATIBILITY.md"} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), table) {
			t.Errorf("%s lacks the table of exit statuses, which is now:\n%s", doc, table)
		}
	}
}
