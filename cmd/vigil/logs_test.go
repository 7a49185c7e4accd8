package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
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
		{[]string{"logs", "nope"}, "vigil logs: " + filepath.Join(root, "sys", "log", "nope", "nope.stdout.log") + ": no such file\nvigil: logs not found\n", 1},
		{[]string{"logs", "db", "-p", "../db"}, "vigil: name \"../db\" contains a slash or NUL byte\n", 1},
		{[]string{"logs"}, "", 2},
	} {
		got, code := c.run(tc.args...)
		if code != tc.code || (tc.code != 2 && got != tc.want) {
			t.Errorf("%v: %d %q, want %d %q", tc.args, code, got, tc.code, tc.want)
		}
	}
}
