package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheck validates files offline with the daemon's errors: a bpm.yml,
// a job directory with a monit file, a whole root; --json, --strict and
// the exit statuses a CI uses.
func TestCheck(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, content string) string {
		p := filepath.Join(dir, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good/config/bpm.yml", "processes:\n- name: good\n  executable: /var/vcap/packages/good/bin/good\n")
	bad := write("bad/config/bpm.yml", "processes:\n- name: bad\n  executable: /var/vcap/packages/bad/bin/bad\n  shutdown_signal: KILL\n  writeable: true\n")
	warned := write("warned/config/bpm.yml", "processes:\n- name: warned\n  executable: /var/vcap/packages/w/bin/w\n  additional_volumes:\n  - path: /var/vcap/data/w\n    writeable: true\n")
	write("web/config/bpm.yml", "processes:\n- name: server\n  executable: /var/vcap/packages/web/bin/web\n")
	monit := write("web/monit", "check process server\n  with pidfile /var/vcap/sys/run/bpm/web/server.pid\n"+
		"  start program \"/var/vcap/jobs/bpm/bin/bpm start web -p server\"\n  stop program \"/var/vcap/jobs/bpm/bin/bpm stop web -p server\"\n"+
		"check process worker\n  with pidfile /var/vcap/sys/run/bpm/web/worker.pid\n"+
		"  start program \"/var/vcap/jobs/bpm/bin/bpm start web -p worker\"\n  stop program \"/var/vcap/jobs/bpm/bin/bpm stop web -p worker\"\n")
	broken := write("broken.monit", "check process x\n  with pidfile\n")

	for _, tc := range []struct {
		args []string
		code int
		want []string // lines the output holds
	}{
		{[]string{good}, 0, []string{good + ": 0 error(s), 0 warning(s)"}},
		{[]string{bad}, 1, []string{"error: " + bad + ":4: processes[0].shutdown_signal: shutdown signal should either be 'TERM' or 'INT' (or left unspecified), but got 'KILL'",
			"warning: " + bad + ":5: processes[0].writeable: unknown key"}},
		{[]string{warned}, 0, []string{"warning: " + warned + ":6: processes[0].additional_volumes[0].writeable: unknown key"}},
		{[]string{"--strict", warned}, 1, nil},
		{[]string{good, "--executables"}, 1, []string{"error: " + good + ":3: processes[0].executable: executable /var/vcap/packages/good/bin/good does not exist"}},
		{[]string{filepath.Join(dir, "web")}, 1, []string{"error: " + monit + ":5: service worker starts bpm process web/worker, which the job's bpm.yml does not define"}},
		{[]string{broken}, 1, []string{"error: " + broken + ":2:"}},
		{[]string{filepath.Join(dir, "nothing")}, 1, []string{"error: " + filepath.Join(dir, "nothing") + ": cannot read: no such file or directory"}},
		{[]string{filepath.Join(dir, "web", "config")}, 1, []string{"error: " + filepath.Join(dir, "web", "config") + ": neither config/bpm.yml nor a monit file: not a job directory"}},
		{[]string{filepath.Join(dir, "good", "templates", "bpm.yml.erb")}, 1, nil},
	} {
		out, errs, code := runSplit(t, append([]string{"check"}, tc.args...)...)
		if code != tc.code || errs != "" {
			t.Errorf("check %v: %d %q\n%s", tc.args, code, errs, out)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("check %v lacks %q:\n%s", tc.args, w, out)
			}
		}
	}

	out, _, code := runSplit(t, "check", "--json", bad, good)
	var rep checkReport
	if code != 1 || json.Unmarshal([]byte(out), &rep) != nil || rep.Errors != 1 || rep.Warnings != 1 || len(rep.Files) != 2 ||
		rep.Problems[0].File != bad || rep.Problems[0].Line != 4 || rep.Problems[0].Field != "processes[0].shutdown_signal" {
		t.Fatalf("check --json: %d %s", code, out)
	}
}

// TestCheckRoot: without PATHs, check reads the root as the daemon would
// (executables included) and says what it would start.
func TestCheckRoot(t *testing.T) {
	c := newCLI(t) // web: a, b, their executable present
	out, _, code := c.runIn("check")
	if code != 0 || !strings.Contains(out, c.root+": 0 error(s), 0 warning(s); a daemon would start 2 process(es)") {
		t.Fatalf("check of a good root: %d %s", code, out)
	}
	c.tr.Config("other", "processes:\n- name: x\n  executable: "+filepath.Join(c.root, "missing")+"\n")
	out, _, code = c.runIn("check", "--json")
	var rep checkReport
	if code != 1 || json.Unmarshal([]byte(out), &rep) != nil || rep.Errors != 1 || len(rep.WouldStart) != 2 ||
		!strings.Contains(rep.Problems[0].Message, "does not exist") {
		t.Fatalf("check of a root with a broken job: %d %s", code, out)
	}
	if _, errs, code := runSplit(t, "check", "--root", filepath.Join(c.root, "nope")); code != 1 || !strings.Contains(errs, "does not exist") {
		t.Fatalf("check of a missing root: %d %q", code, errs)
	}
}
