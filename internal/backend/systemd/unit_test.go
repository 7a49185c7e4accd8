package systemd

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/internal/supervise/restart"
	"github.com/vigil-bosh/vigil/job"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// testOptions exercise every option: a default restart policy with a limit.
func testOptions(vigil string) Options {
	return Options{
		Vigil:   vigil,
		Restart: restart.Policy{Initial: 250 * time.Millisecond, Limit: restart.Limit{Count: 10, Within: 5 * time.Minute}},
	}
}

// loadJobs parses testdata/jobs/*.yml as the bpm.yml of jobs under root,
// with /var/vcap in them replaced by root.
func loadJobs(t *testing.T, root string) (boshpath.Layout, []*job.Job) {
	t.Helper()
	l, err := boshpath.New(root)
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("testdata/jobs/*.yml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no test jobs: %v", err)
	}
	var jobs []*job.Job
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(filepath.Base(f), ".yml")
		data = []byte(strings.ReplaceAll(string(data), "/var/vcap", root))
		j, _, err := job.Parse(l, name, l.BPMConfig(name), data)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		jobs = append(jobs, j)
	}
	return l, jobs
}

func TestGolden(t *testing.T) {
	l, jobs := loadJobs(t, "/var/vcap")
	var units []Unit
	for _, j := range jobs {
		o := testOptions("/var/vcap/packages/vigil/bin/vigil")
		if j.Name == "minimal" {
			o = Options{Vigil: o.Vigil} // every default
		}
		units = append(units, Units(l, []*job.Job{j}, o)...)
	}
	if *update {
		old, _ := filepath.Glob("testdata/golden/*")
		for _, f := range old {
			os.Remove(f)
		}
	}
	for _, u := range units {
		path := filepath.Join("testdata/golden", u.Name)
		if *update {
			if err := os.WriteFile(path, []byte(u.Text), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%s: %v (run go test ./internal/backend/systemd -update)", u.Name, err)
			continue
		}
		if string(want) != u.Text {
			t.Errorf("%s differs from its golden file:\n--- got\n%s--- want\n%s", u.Name, u.Text, want)
		}
	}
	golden, _ := filepath.Glob("testdata/golden/*")
	if !*update && len(golden) != len(units) {
		t.Errorf("%d golden files for %d units", len(golden), len(units))
	}
}

func TestEscape(t *testing.T) {
	for in, want := range map[string]string{
		"web": "web", "cloud-controller": `cloud\x2dcontroller`, "a_b.c": "a_b.c",
		".hidden": `\x2ehidden`, "a b": `a\x20b`, "x/y": "x-y",
	} {
		if got := Escape(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
	}
	if got, want := ServiceName("cloud-controller", "local-worker"), `vigil-cloud\x2dcontroller-local\x2dworker.service`; got != want {
		t.Errorf("ServiceName = %q, want %q", got, want)
	}
}

// TestVerify runs systemd-analyze verify over every unit generated for the
// test jobs, in a root where the executables, the hook and vigil exist.
func TestVerify(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is missing (apt-get install systemd; .ci/run installs it): units not verified")
	}
	root := t.TempDir()
	l, jobs := loadJobs(t, root)
	vigil := filepath.Join(root, "packages/vigil/bin/vigil")
	exes := []string{vigil}
	for _, j := range jobs {
		for _, p := range j.Processes {
			exes = append(exes, p.Executable)
			if p.Hooks.PreStart != "" {
				exes = append(exes, p.Hooks.PreStart)
			}
		}
	}
	for _, e := range exes {
		if err := os.MkdirAll(filepath.Dir(e), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(e, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"data/full", "jobs/minimal", "jobs/cloud-controller", "jobs/full", "jobs/host"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	units := Units(l, jobs, testOptions(vigil))
	var paths []string
	for _, u := range units {
		p := filepath.Join(dir, u.Name)
		if err := os.WriteFile(p, []byte(u.Text), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	cmd := exec.Command(analyze, append([]string{"verify", "--man=no"}, paths...)...)
	cmd.Env = append(os.Environ(), "SYSTEMD_UNIT_PATH="+dir+":", "SYSTEMD_LOG_LEVEL=notice")
	out, err := cmd.CombinedOutput()
	var complaints []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if line != "" && !newerKey(line, analyze) {
			complaints = append(complaints, line)
		}
	}
	if err != nil || len(complaints) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, strings.Join(complaints, "\n"))
	}
}

// newerKey reports whether a verify complaint is only that a systemd
// older than 254 does not know the backoff keys (it ignores them; the
// VM rig verifies them on a newer one).
func newerKey(line, analyze string) bool {
	if !strings.Contains(line, "Unknown key 'RestartSteps'") && !strings.Contains(line, "Unknown key 'RestartMaxDelaySec'") {
		return false
	}
	out, _ := exec.Command(analyze, "--version").Output()
	var v int
	_, err := fmt.Sscanf(string(out), "systemd %d", &v)
	return err == nil && v < 254
}

// TestReadinessMakesNotify: a process that says when it is ready (a probe
// or a notification) is Type=notify, so that its dependants wait for it, and
// its start is bounded by its startup probe's budget, not by the hook's.
func TestReadinessMakesNotify(t *testing.T) {
	l, _ := boshpath.New("/var/vcap")
	j := &job.Job{Name: "j", ConfigPath: "/var/vcap/jobs/j/config/bpm.yml"}
	probe := &job.ProbeSpec{TCP: &job.TCPProbe{Port: 80}, Period: 2 * time.Second, Timeout: time.Second, FailureThreshold: 30}
	for _, c := range []struct {
		name          string
		health        job.Health
		typ, deadline string
	}{
		{"plain", job.Health{}, "Type=exec", "TimeoutStartSec=60"},
		{"readiness probe", job.Health{Readiness: probe}, "Type=notify", "TimeoutStartSec=infinity"},
		{"startup probe", job.Health{Startup: probe}, "Type=notify", "TimeoutStartSec=150"},
		{"notify", job.Health{Notify: "systemd"}, "Type=notify", "TimeoutStartSec=infinity"},
	} {
		u := Service(l, j, job.Process{Job: "j", Name: "p", Executable: "/bin/true", Health: c.health}, Options{Vigil: "/v"})
		for _, want := range []string{c.typ, c.deadline} {
			if !strings.Contains(u.Text, "\n"+want+"\n") {
				t.Errorf("%s: no %s in\n%s", c.name, want, u.Text)
			}
		}
		if strings.Contains(u.Text, "[Install]") || strings.Contains(u.Text, "\nUser=") {
			t.Errorf("%s: an [Install] section or a User= in\n%s", c.name, u.Text)
		}
	}
}

// TestHostIsolationUnit: a process under isolation: host gets the unit it
// would get in the sandbox, limits included, with no sandboxing property
// added: only the comment that says where the executable runs differs
// (and the configuration's digest, so that a change of the key restarts
// the process).
func TestHostIsolationUnit(t *testing.T) {
	l, jobs := loadJobs(t, "/var/vcap")
	for _, j := range jobs {
		if j.Name != "host" {
			continue
		}
		host := j.Processes[0]
		sandboxed := host
		sandboxed.Isolation = ""
		a := strings.Split(Service(l, j, host, testOptions("/vigil")).Text, "\n")
		b := strings.Split(Service(l, j, sandboxed, testOptions("/vigil")).Text, "\n")
		if len(a) != len(b) {
			t.Fatalf("the units differ in length:\n%s\n---\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
		}
		var differ []string
		for i := range a {
			if a[i] != b[i] {
				differ = append(differ, a[i])
			}
		}
		want := []string{"# The executable runs as vcap (the host's namespaces, unisolated: isolation: host); vigil exec as root."}
		if len(differ) != 2 || !strings.HasPrefix(differ[0], "# Process configuration sha256:") || differ[1] != want[0] {
			t.Errorf("lines that differ from the sandboxed unit: %q, want the digest and %q", differ, want)
		}
		return
	}
	t.Fatal("no test job host")
}
