package monit

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// cliRoot writes a root whose monitrc points at base (host:port) and
// whose job file holds chain.
func cliRoot(t *testing.T, addr string) string {
	root := t.TempDir()
	host, port, _ := net.SplitHostPort(addr)
	files := map[string]string{
		"bosh/etc/monitrc": fmt.Sprintf("set daemon 10\nset httpd port %s and use address %s\n"+
			"  allow cleartext /var/vcap/monit/monit.user\ninclude /var/vcap/monit/job/*.monitrc\n", port, host),
		"monit/monit.user":         "vcap:random-password",
		"monit/job/0000_x.monitrc": chain,
	}
	for rel, content := range files {
		p := filepath.Join(root, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func runCLI(t *testing.T, root string, args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	var calls []string
	c := &CLI{Root: root, Stdout: &out, Stderr: &errb,
		Reload: func(context.Context) error { calls = append(calls, "reload"); return nil },
		Quit:   func(context.Context) error { calls = append(calls, "quit"); return nil }}
	code := c.Run(context.Background(), args)
	return code, out.String(), errb.String()
}

func TestCLI(t *testing.T) {
	e, _, log := fixture(t, chain)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan string, 16)
	e.onDone = func(s, a string, err error) { done <- a + ":" + s }
	go e.Run(ctx)
	base := serve(t, e)
	root := cliRoot(t, strings.TrimPrefix(base, "http://"))

	tests := []struct {
		args           []string
		code           int
		stdout, stderr string
	}{
		{[]string{"-V"}, 0, "This is Monit version 5.2.5\nCopyright (C) 2000-2011 Tildeslash Ltd. All Rights Reserved.\n", ""},
		{[]string{"-t"}, 0, "", "Control file syntax OK\n"}, // monit logs it to stderr
		{[]string{"bogus"}, 1, "", "monit: invalid argument -- bogus  (-h will show valid arguments)\n"},
		{[]string{"start"}, 1, "", "monit: please specify the configured service name or 'all' after start\n"},
		{[]string{"stop", "nope"}, 1, "", "monit: action failed -- There is no service by that name\n"},
		{[]string{"-g", "nogroup", "stop"}, 0, "", ""},
		{[]string{"reload", "gorouter-healthchecker"}, 0, "", "Reinitializing monit daemon\n"},
	}
	for _, tc := range tests {
		code, out, errs := runCLI(t, root, tc.args...)
		if code != tc.code || out != tc.stdout || errs != tc.stderr {
			t.Errorf("%v: got %d %q %q, want %d %q %q", tc.args, code, out, errs, tc.code, tc.stdout, tc.stderr)
		}
	}
	code, out, _ := runCLI(t, root, "summary")
	want := "The Monit daemon 5.2.5 uptime: 2h 13m \n\nProcess 'db'                        not monitored\n"
	if code != 0 || !strings.HasPrefix(out, want) {
		t.Fatalf("summary: %d %q", code, out)
	}
	// stop -g vcap, exactly as the agent's StopAndWait runs it: one POST per member.
	if code, _, errs := runCLI(t, root, "-c", filepath.Join(root, "bosh", "etc", "monitrc"), "stop", "-g", "vcap"); code != 0 {
		t.Fatalf("stop -g vcap: %d %s", code, errs)
	}
	got := map[string]bool{}
	for range 3 {
		select {
		case a := <-done:
			got[a] = true
		case <-time.After(10 * time.Second):
			t.Fatalf("actions done: %v (log %s)", got, log)
		}
	}
	if !got["stop:db"] || !got["stop:api"] || !got["stop:web"] {
		t.Fatalf("actions: %v", got)
	}
	// The daemon is not running: no status, exit 0.
	dead := cliRoot(t, "127.0.0.1:1")
	if code, out, errs := runCLI(t, dead, "summary"); code != 0 || out != "" ||
		errs != "monit: no status available -- the monit daemon is not running\n" {
		t.Fatalf("no daemon: %d %q %q", code, out, errs)
	}
	// A broken job file fails -t with file and line.
	os.WriteFile(filepath.Join(root, "monit", "job", "0001_bad.monitrc"), []byte("check process\n"), 0o600)
	if code, _, errs := runCLI(t, root, "-t"); code != 1 || !strings.Contains(errs, "0001_bad.monitrc:1: syntax error") {
		t.Fatalf("-t: %d %q", code, errs)
	}
}
