package bpmcli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestBPMLog: start, stop and run append bpm's lager lines to
// ROOT/sys/log/JOB/bpm.log, each step in bpm's order and sessions, with or
// without a daemon.
func TestBPMLog(t *testing.T) {
	modes(t, func(r *root) {
		webJob(r)
		r.errand("errand", "exit 0")
	}, func(t *testing.T, r *root) {
		r.must("start", "web")
		r.must("start", "web")
		r.must("stop", "web")
		r.must("stop", "web")
		r.must("run", "errand")
		type line struct {
			Timestamp, Level, Source, Message string
			Data                              map[string]string
		}
		read := func(job string) []line {
			var out []line
			for _, l := range strings.Split(strings.TrimSpace(r.read(filepath.Join(r.layout.LogDir(job), "bpm.log"))), "\n") {
				var v line
				if err := json.Unmarshal([]byte(l), &v); err != nil {
					t.Fatalf("not JSON: %s", l)
				}
				if !regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z$`).MatchString(v.Timestamp) ||
					v.Level != "info" || v.Source != "bpm" || v.Data["job"] != job || v.Data["process"] != job {
					t.Fatalf("line %s", l)
				}
				out = append(out, v)
			}
			return out
		}
		var got []string
		for _, l := range read("web") {
			got = append(got, l.Message+" "+l.Data["session"])
		}
		start := []string{"bpm.start.acquiring-lifecycle-lock.starting 1.1", "bpm.start.acquiring-lifecycle-lock.complete 1.1",
			"bpm.start.starting 1"}
		end := func(cmd, sub string) []string {
			return []string{"bpm." + cmd + ".complete 1", "bpm." + cmd + ".releasing-lifecycle-lock.starting " + sub,
				"bpm." + cmd + ".releasing-lifecycle-lock.complete " + sub}
		}
		stop := []string{"bpm.stop.acquiring-lifecycle-lock.starting 1.1", "bpm.stop.acquiring-lifecycle-lock.complete 1.1",
			"bpm.stop.starting 1"}
		var want []string
		if r.daemon == nil {
			want = append(want, start...)
			want = append(want, "bpm.start.start-process.starting 1.2", "bpm.start.start-process.complete 1.2")
			want = append(want, end("start", "1.3")...)
			want = append(want, start...)
			want = append(want, "bpm.start.process-already-running 1")
		} else {
			want = append(append(want, start...), end("start", "1.2")...)
			want = append(want, start...)
		}
		want = append(want, end("start", "1.2")...)
		want = append(append(want, stop...), end("stop", "1.2")...)
		want = append(append(want, stop...), "bpm.stop.job-already-stopped 1")
		want = append(want, end("stop", "1.2")...)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("web's bpm.log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if msgs := read("errand"); len(msgs) != 8 || msgs[3].Message != "bpm.run.run-process.starting" ||
			msgs[4].Message != "bpm.run.run-process.complete" {
			t.Fatalf("errand's bpm.log: %+v", msgs)
		}
		if fi, err := os.Stat(filepath.Join(r.layout.LogDir("web"), "bpm.log")); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("bpm.log: %v %v", fi.Mode(), err)
		}
	})
}

// TestBPMLogSymlink: a bpm.log planted as a symlink fails start, stop and
// run as bpm fails them (exit 1, "refusing to open symlink at"), leaves
// its target as it was, and starts nothing.
func TestBPMLogSymlink(t *testing.T) {
	r := newRoot(t)
	webJob(r)
	sentinel := filepath.Join(r.layout.Root(), "sentinel")
	r.write(sentinel, "untouched", 0o600)
	os.MkdirAll(r.layout.LogDir("web"), 0o750)
	if err := os.Symlink(sentinel, filepath.Join(r.layout.LogDir("web"), "bpm.log")); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"start", "stop", "run"} {
		res := r.bpm(cmd, "web")
		if res.code != 1 || !strings.HasPrefix(res.err, "Error: refusing to open symlink at "+filepath.Join(r.layout.LogDir("web"), "bpm.log")) {
			t.Fatalf("%s: %+v", cmd, res)
		}
	}
	if got := r.read(sentinel); got != "untouched" {
		t.Fatalf("the symlink's target now holds %q", got)
	}
	if len(r.inits("web", "web")) != 0 {
		t.Fatal("start started the process")
	}
}
