package job

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// newRoot returns a temporary BOSH root and its layout.
func newRoot(t *testing.T) (string, func(job, bpmYML string)) {
	t.Helper()
	root := t.TempDir()
	return root, func(job, bpmYML string) {
		writeFile(t, filepath.Join(root, "jobs", job, "config", "bpm.yml"), strings.ReplaceAll(bpmYML, "ROOT", root), 0o644)
	}
}

func TestLoadExecutable(t *testing.T) {
	root, addJob := newRoot(t)
	l := layout(t, root)
	writeFile(t, filepath.Join(root, "packages/web/bin/ok"), "#!/bin/sh\n", 0o755)
	writeFile(t, filepath.Join(root, "packages/web/bin/plain"), "data", 0o644)
	if err := os.MkdirAll(filepath.Join(root, "packages/web/bin/dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "packages/web/bin/ok"), filepath.Join(root, "packages/web/bin/link")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, exe string
		err       string // "" for none; ROOT stands for the root
	}{
		{"executable", "ROOT/packages/web/bin/ok", ""},
		{"symlink to executable", "ROOT/packages/web/bin/link", ""},
		{"not executable", "ROOT/packages/web/bin/plain", "executable ROOT/packages/web/bin/plain is not executable (mode -rw-r--r--)"},
		{"missing", "ROOT/packages/web/bin/gone", "executable ROOT/packages/web/bin/gone does not exist"},
		{"directory", "ROOT/packages/web/bin/dir", "executable ROOT/packages/web/bin/dir is a directory"},
		{"relative to workdir", "bin/ok", ""},
		{"bare name not in PATH", "nosuchtool", `executable "nosuchtool" not found in PATH ROOT/jobs/web/bin:/usr/local/bin:/usr/local/sbin:/usr/bin:/usr/sbin:/bin:/sbin:.`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addJob("web", "processes:\n- name: web\n  workdir: ROOT/packages/web\n  executable: "+tt.exe+"\n")
			j, _, err := Load(l, "web")
			if tt.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				want := strings.ReplaceAll(tt.exe, "ROOT", root)
				if !filepath.IsAbs(want) {
					want = filepath.Join(root, "packages/web", want)
				}
				if got := j.Processes[0].ResolvedExecutable; got != want {
					t.Errorf("ResolvedExecutable = %q, want %q", got, want)
				}
				return
			}
			if j != nil {
				t.Error("Load returned a job with an error")
			}
			sameAts(t, "errors", errorsOf(t, err, l.BPMConfig("web")),
				[]at{{4, "processes[0].executable", strings.ReplaceAll(tt.err, "ROOT", root)}})
		})
	}
}

func TestLoadResolvesBareName(t *testing.T) {
	root, addJob := newRoot(t)
	l := layout(t, root)
	writeFile(t, filepath.Join(root, "jobs/web/bin/ctl"), "#!/bin/sh\n", 0o755)
	writeFile(t, filepath.Join(root, "data/web/here"), "#!/bin/sh\n", 0o755)
	writeFile(t, filepath.Join(root, "a/tool"), "x", 0o644) // found first, but not executable
	writeFile(t, filepath.Join(root, "b/tool"), "#!/bin/sh\n", 0o755)
	addJob("web", `processes:
- {name: ctl, executable: ctl}
- {name: sh, executable: sh}
- {name: here, executable: here, workdir: ROOT/data/web}
- {name: tool, executable: tool, env: {PATH: "ROOT/a:ROOT/b"}}
`)
	j, _, err := Load(l, "web")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(root, "jobs/web/bin/ctl"), "", filepath.Join(root, "data/web/here"), filepath.Join(root, "b/tool")}
	for i, p := range j.Processes {
		if i == 1 { // from the host: somewhere in the default PATH
			if !filepath.IsAbs(p.ResolvedExecutable) || filepath.Base(p.ResolvedExecutable) != "sh" {
				t.Errorf("sh resolved to %q", p.ResolvedExecutable)
			}
			continue
		}
		if p.ResolvedExecutable != want[i] {
			t.Errorf("%s resolved to %q, want %q", p.Name, p.ResolvedExecutable, want[i])
		}
	}
	// Only a non-executable match: that is the error, not "not found".
	addJob("web", "processes:\n- {name: tool, executable: tool, env: {PATH: \"ROOT/a\"}}\n")
	_, _, err = Load(l, "web")
	sameAts(t, "errors", errorsOf(t, err, l.BPMConfig("web")),
		[]at{{2, "processes[0].executable", "executable " + root + "/a/tool is not executable (mode -rw-r--r--)"}})
}

func TestLoadErrandAndErrors(t *testing.T) {
	root, addJob := newRoot(t)
	l := layout(t, root)
	writeFile(t, filepath.Join(root, "jobs/smoke/bin/run"), "#!/bin/sh\n", 0o755)
	addJob("smoke", "processes:\n- {name: smoke, executable: ROOT/jobs/smoke/bin/run}\n")
	j, _, err := Load(l, "smoke")
	if err != nil || !j.Errand {
		t.Fatalf("Load(smoke) = %+v, %v", j, err)
	}
	// Parse errors and executable errors together, in line order.
	addJob("bad", "processes:\n- {name: a, executable: ROOT/nope}\n- {executable: /bin/sh}\n")
	_, _, err = Load(l, "bad")
	sameAts(t, "errors", errorsOf(t, err, l.BPMConfig("bad")), []at{
		{2, "processes[0].executable", "executable " + root + "/nope does not exist"},
		{3, "processes[1].name", "invalid config: name"},
	})
	if !errors.Is(err, fs.ErrNotExist) {
		t.Error("errors.Is(err, fs.ErrNotExist) is false for a missing executable")
	}
	_, _, err = Load(l, "absent")
	if got := errorsOf(t, err, l.BPMConfig("absent")); len(got) != 1 || got[0].msg != "cannot read: no such file or directory" || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load(absent) = %v", err)
	}
	_, _, err = Load(l, "../x")
	if got := errorsOf(t, err, l.BPMConfig("../x")); len(got) != 1 || !strings.HasPrefix(got[0].msg, "invalid job name: ") {
		t.Errorf("Load(../x) = %v", err)
	}
}

// TestLoadRefusesWhatCannotStartHere: where the process runs, an
// open_files above the machine's fs.nr_open is an error (setrlimit
// refuses it, root's too); up to it, none. And a job directory whose name
// holds a newline is refused by name.
func TestLoadRefusesWhatCannotStartHere(t *testing.T) {
	b, err := os.ReadFile(nrOpenPath)
	if err != nil {
		t.Skip(err)
	}
	nrOpen := strings.TrimSpace(string(b))
	root, addJob := newRoot(t)
	l := layout(t, root)
	addJob("web", "processes:\n- name: web\n  executable: /bin/sh\n  limits: {open_files: "+nrOpen+"}\n")
	if _, _, err := Load(l, "web"); err != nil {
		t.Fatalf("open_files at fs.nr_open: %v", err)
	}
	addJob("web", "processes:\n- name: web\n  executable: /bin/sh\n  limits: {open_files: "+nrOpen+"1}\n")
	_, _, err = Load(l, "web")
	sameAts(t, "errors", errorsOf(t, err, l.BPMConfig("web")), []at{{4, "processes[0].limits.open_files",
		"open_files is " + nrOpen + "1, above this machine's fs.nr_open (" + nrOpen + "): setrlimit refuses it (EPERM), " +
			"so the process could never start here (bpm's runc fails the same way)"}})
	addJob("a\nb", "processes:\n- {name: web, executable: /bin/sh}\n")
	_, _, err = Load(l, "a\nb")
	if got := errorsOf(t, err, l.BPMConfig("a\nb")); len(got) != 1 ||
		got[0].msg != `invalid job name: name "a\nb" contains the control character U+000A: names are printed one to a line `+
			`(bpm list, vigil status, monit's summary), where it would forge lines` {
		t.Errorf("Load(a\\nb) = %v", err)
	}
}

func TestLoadAll(t *testing.T) {
	root, addJob := newRoot(t)
	l := layout(t, root)
	writeFile(t, filepath.Join(root, "bin/ok"), "#!/bin/sh\n", 0o755)
	addJob("b", "processes:\n- {name: b, executable: ROOT/bin/ok, writeable: x}\n")
	addJob("a", "processes:\n- {name: a, executable: ROOT/bin/ok}\n")
	addJob("c-broken", "processes:\n- {name: c, executable: ROOT/bin/ok, shutdown_signal: HUP}\n")
	writeFile(t, filepath.Join(root, "jobs/no-bpm/monit"), "", 0o644)                                     // a monit-only job
	writeFile(t, filepath.Join(root, "jobs/stray-file"), "", 0o644)                                       // not a directory
	if err := os.Symlink(filepath.Join(root, "jobs/a"), filepath.Join(root, "jobs/linked")); err != nil { // BOSH links job dirs
		t.Fatal(err)
	}

	jobs, warns, errs := LoadAll(l, nil)
	var names []string
	for _, j := range jobs {
		names = append(names, j.Name)
	}
	if strings.Join(names, ",") != "a,b,linked" {
		t.Errorf("jobs = %v", names)
	}
	if len(warns) != 1 || !strings.Contains(warns[0].Msg, `"writeable"`) {
		t.Errorf("warnings = %v", warns)
	}
	if len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), "job c-broken: "+l.BPMConfig("c-broken")+":2: processes[0].shutdown_signal: ") {
		t.Fatalf("errs = %v", errs)
	}
	var list ErrorList
	if !errors.As(errs[0], &list) {
		t.Error("the job's error does not unwrap to an ErrorList")
	}

	jobs, _, errs = LoadAll(l, []string{"b", "unknown", "a", "b"})
	if len(jobs) != 2 || jobs[0].Name != "a" || jobs[1].Name != "b" {
		t.Errorf("only: jobs = %v", jobs)
	}
	if len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), "job unknown: unknown job") {
		t.Errorf("only: errs = %v", errs)
	}
	if _, _, errs = LoadAll(layout(t, filepath.Join(root, "missing")), nil); len(errs) != 1 {
		t.Errorf("missing jobs dir: errs = %v", errs)
	}
}
