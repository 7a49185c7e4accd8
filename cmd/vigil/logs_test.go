package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-bosh/vigil/internal/testproc"
)

// TestLogsCommand reads the logs of a job the daemon runs: every process
// with headers, one process's last line, and -f seeing a line written
// after it started, until Ctrl-C, which exits 0.
func TestLogsCommand(t *testing.T) {
	c := newCLI(t)
	c.daemon()
	dir := filepath.Join(c.root, "sys", "log", "web")
	a, b := filepath.Join(dir, "a.stdout.log"), filepath.Join(dir, "b.stdout.log")
	testproc.WaitUntil(t, dir, func() bool { return testproc.FileHolds(a, "started one\n")() && testproc.FileHolds(b, "started\n")() })
	want := "==> " + a + " <==\nstarted one\n\n==> " + b + " <==\nstarted\n"
	if out, code := c.run("logs", "web"); code != 0 || out != want {
		t.Fatalf("logs web: %d\n%s\nwant\n%s", code, out, want)
	}
	if out, code := c.run("logs", "web", "-p", "a", "-n", "1"); code != 0 || out != "started one\n" {
		t.Fatalf("logs web -p a -n 1: %d %q", code, out)
	}

	cmd := exec.Command(vigilBin, "logs", "web", "-p", "a", "-f", "--root", c.root)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := make(chan string, 16)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	expectLine := func(want string) {
		t.Helper()
		select {
		case l := <-lines:
			if l != want {
				t.Fatalf("logs -f printed %q, want %q (stderr %q)", l, want, stderr.String())
			}
		case <-time.After(testproc.Guard):
			t.Fatalf("logs -f printed no %q", want)
		}
	}
	expectLine("started one") // -f goes on from where the last lines ended: nothing later is missed
	if _, code := c.run("signal", "web", "-p", "a", "HUP"); code != 0 {
		t.Fatal("signal failed")
	}
	expectLine("got HUP")
	cmd.Process.Signal(syscall.SIGINT)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("logs -f after Ctrl-C: %v (stderr %q)", err, stderr.String())
	}
}

// TestLogsWithoutDaemon reads log files with no daemon and no bpm.yml, as
// bpm logs does: -n, -e, -a, -q, and the errors.
func TestLogsWithoutDaemon(t *testing.T) {
	root := t.TempDir()
	c := &cli{t: t, root: root}
	dir := filepath.Join(root, "sys", "log", "db")
	os.MkdirAll(dir, 0o750)
	out, errs := filepath.Join(dir, "db.stdout.log"), filepath.Join(dir, "db.stderr.log")
	os.WriteFile(out, []byte("1\n2\n3\n4\n5\n"), 0o600)
	os.WriteFile(errs, []byte("oops\nno newline"), 0o600)
	for _, tc := range []struct {
		args []string
		want string
		code int
	}{
		{[]string{"logs", "db", "-n", "2"}, "4\n5\n", 0},
		{[]string{"logs", "db", "-p", "db", "--lines", "3"}, "3\n4\n5\n", 0},
		{[]string{"logs", "db", "--stderr"}, "oops\nno newline\n", 0},
		{[]string{"logs", "db", "-e", "-n", "1"}, "no newline\n", 0},
		{[]string{"logs", "db", "-a", "-n", "1"}, "==> " + out + " <==\n5\n\n==> " + errs + " <==\nno newline\n", 0},
		{[]string{"logs", "db", "-a", "-q", "-n", "1"}, "5\nno newline\n", 0},
		{[]string{"logs", "db", "-n", "0"}, "", 0},
		{[]string{"logs", "nope"}, "vigil: no job nope: neither " + filepath.Join(root, "jobs", "nope", "config", "bpm.yml") +
			" nor " + filepath.Join(root, "sys", "log", "nope") + " exists (known jobs: db)\n", 4},
		{[]string{"logs", "db", "-p", "bd"}, "vigil: no process bd in job db: neither its bpm.yml nor its log files name it (did you mean \"db\"?)\n", 4},
		{[]string{"logs", "db", "-p", "../db"}, "vigil: name \"../db\" contains a slash or NUL byte\n", 4},
		// --grep: smart case; --since: by the file's time, lines without stamps.
		{[]string{"logs", "db", "-a", "-q", "--grep", "O"}, "", 0},
		{[]string{"logs", "db", "-a", "-q", "--grep", "o"}, "oops\nno newline\n", 0},
		{[]string{"logs", "db", "-a", "-q", "-g", "^[24]$|newline"}, "2\n4\nno newline\n", 0},
		{[]string{"logs", "db", "-q", "--grep", "[0-9]", "-n", "2"}, "4\n5\n", 0},
		{[]string{"logs", "db", "-q", "--since", "1h"}, "1\n2\n3\n4\n5\n", 0},
		{[]string{"logs", "db", "-q", "--since", "2000-01-01 00:00"}, "1\n2\n3\n4\n5\n", 0},
		{[]string{"logs", "db", "--grep", "("}, "", 2},
		{[]string{"logs", "db", "--since", "yesterday"}, "", 2},
		{[]string{"logs"}, "", 2},
	} {
		got, code := c.run(tc.args...)
		if code != tc.code || (tc.code != 2 && got != tc.want) {
			t.Errorf("%v: %d %q, want %d %q", tc.args, code, got, tc.code, tc.want)
		}
	}
}

// TestLogsSince: --since judges a line by its time stamp (logs.timestamps)
// and a file without stamps by its modification time; -n then counts the
// lines kept.
func TestLogsSince(t *testing.T) {
	root := t.TempDir()
	c := &cli{t: t, root: root}
	dir := filepath.Join(root, "sys", "log", "db")
	os.MkdirAll(dir, 0o750)
	now := time.Now().UTC()
	stamp := func(ago time.Duration, text string) string {
		return now.Add(-ago).Format("2006-01-02T15:04:05.000Z07:00") + " " + text + "\n"
	}
	os.WriteFile(filepath.Join(dir, "db.stdout.log"), []byte(stamp(3*time.Hour, "old")+stamp(90*time.Minute, "older")+
		stamp(30*time.Minute, "recent")+stamp(time.Minute, "newest")), 0o600)
	plain := filepath.Join(dir, "db.stderr.log")
	os.WriteFile(plain, []byte("no stamp\n"), 0o600)
	os.Chtimes(plain, now.Add(-2*time.Hour), now.Add(-2*time.Hour))
	strip := func(s string) string { return regexp.MustCompile(`(?m)^\d{4}-\S+ `).ReplaceAllString(s, "") }
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--since", "1h"}, "recent\nnewest\n"},
		{[]string{"--since", "2h"}, "older\nrecent\nnewest\n"},
		{[]string{"--since", "2h", "-n", "1"}, "newest\n"},
		{[]string{"--since", now.Add(-2 * time.Hour).Format(time.RFC3339), "--grep", "rec"}, "recent\n"},
		{[]string{"--since", "1h", "-e"}, ""},           // the file is older: none of its lines
		{[]string{"--since", "3h", "-e"}, "no stamp\n"}, // the file is newer: all of them
	} {
		got, code := c.run(append([]string{"logs", "db", "-q"}, tc.args...)...)
		if code != 0 || strip(got) != tc.want {
			t.Errorf("%v: %d %q, want %q", tc.args, code, got, tc.want)
		}
	}
}
