package bpmcli_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/internal/bpmcli"
	"github.com/vigil-bosh/vigil/internal/launch"
	"github.com/vigil-bosh/vigil/internal/pidfile"
	"github.com/vigil-bosh/vigil/internal/testproc"
)

// main runs bpmcli.Main in this process against the root.
func (r *root) main(args ...string) result {
	var out, errb bytes.Buffer
	self, _ := os.Executable()
	code := bpmcli.Main(args, bpmcli.Env{
		Stdout: &out, Stderr: &errb, Version: "test", Self: self,
		Getenv: func(k string) string {
			if k == "BPM_BOSH_ROOT" {
				return r.layout.Root()
			}
			if k == launch.IsolationEnv {
				return "off"
			}
			return ""
		},
	})
	return result{out: out.String(), err: errb.String(), code: code}
}

// TestBadInput: bpm's error texts and exit 1, and nothing started or
// stopped by accident.
func TestBadInput(t *testing.T) {
	r := newRoot(t)
	webJob(r)
	marker := filepath.Join(r.layout.Root(), "errand-ran")
	r.errand("errand", "touch "+marker)
	r.write(r.layout.BPMConfig("broken"), "processes: [\n", 0o644)
	r.write(filepath.Join(r.layout.JobDir("nobpm"), "bin", "run"), "#!/bin/sh\n", 0o755)
	r.must("start", "web")
	keep := r.pidFile("web", "web")
	cfg := func(job string) string { return r.layout.BPMConfig(job) }
	tests := []struct {
		args  []string
		want  string // the whole of stderr, or its last line when usage is printed
		usage bool
	}{
		{[]string{"frobnicate", "web"}, `Error: unknown command "frobnicate" for "bpm"`, false},
		{[]string{"start"}, "Error: must specify a job", true},
		{[]string{"stop", "-p", "web"}, "Error: must specify a job", true},
		{[]string{"start", "web", "-x"}, "Error: unknown shorthand flag: 'x' in -x", true},
		{[]string{"logs", "web", "--lines", "many"}, `Error: invalid argument "many" for "-n, --lines" flag: strconv.ParseInt: parsing "many": invalid syntax`, true},
		{[]string{"run", "errand", "-v", "/var/vcap/data/x:bogus"}, "Error: invalid volume option: bogus", false},
		{[]string{"run", "errand", "-v", "/a:b:c"}, "Error: invalid volume definition (format: <path>[:<options>]): /a:b:c", false},
		{[]string{"run", "errand", "-e", "NOVALUE"}, `Error: invalid envionment variable definition (format should be KEY=value): "NOVALUE"`, false},
		{[]string{"start", "nobpm"}, "Error: failed to parse job configuration: " + cfg("nobpm") + ": cannot read: no such file or directory", false},
		{[]string{"run", "nosuchjob"}, "Error: failed to parse job configuration: " + cfg("nosuchjob") + ": cannot read: no such file or directory", false},
		{[]string{"start", "web", "-p", "nope"}, `Error: process "nope" not present in job configuration (` + cfg("web") + ")", false},
		{[]string{"run", "-p", "nope", "errand"}, `Error: process "nope" not present in job configuration (` + cfg("errand") + ")", false},
		{[]string{"start", "web", "-p", "../web"}, `Error: invalid process name: name "../web" contains a slash or NUL byte`, false},
		{[]string{"pid", "errand"}, "Error: process is not running or could not be found", false},
		{[]string{"version", "extra"}, `Error: unknown command "extra" for "bpm version"`, true},
		{nil, "Error: Exit code 1", true},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			res := r.main(tt.args...)
			if res.code != 1 || res.out != "" {
				t.Fatalf("exit %d, stdout %q", res.code, res.out)
			}
			got := res.err
			if tt.usage {
				if !strings.Contains(got, "Usage:") {
					t.Errorf("no usage in %q", got)
				}
				got = got[strings.LastIndex(strings.TrimSuffix(got, "\n"), "\n")+1:]
			}
			if !strings.HasPrefix(tt.want, "Error: failed to parse") && got != tt.want+"\n" {
				t.Fatalf("stderr %q\nwant   %q", got, tt.want+"\n")
			}
			if !strings.HasPrefix(got, tt.want) {
				t.Fatalf("stderr %q\nwant   %q", got, tt.want)
			}
		})
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the errand ran")
	}
	if got := r.inits("web", "web"); len(got) != 1 || got[0] != keep {
		t.Errorf("web's inits are %v, want just %d", got, keep)
	}
	for _, job := range []string{"errand", "nobpm", "nosuchjob"} {
		if len(r.inits(job, job)) != 0 {
			t.Errorf("%s got started", job)
		}
	}
}

// TestStopSurvivesABrokenConfig: with a running process whose bpm.yml
// cannot be parsed, or lacks the process, stop fails as bpm's does (exit
// 1, bpm's error, the reason in bpm.log), but, unlike bpm, still brings
// the process down with SIGTERM.
func TestStopSurvivesABrokenConfig(t *testing.T) {
	for name, c := range map[string]struct {
		breakIt       func(r *root)
		error, logged string
	}{
		"invalid": {func(r *root) { r.write(r.layout.BPMConfig("web"), "processes: [\n", 0o644) },
			"Error: failed to parse job configuration: ", "bpm.stop.failed-to-parse-config"},
		"removed": {func(r *root) { os.Remove(r.layout.BPMConfig("web")) },
			"Error: failed to parse job configuration: ", "bpm.stop.failed-to-parse-config"},
		"renamed": {func(r *root) {
			r.write(r.layout.BPMConfig("web"), "processes:\n- name: other\n  executable: /bin/true\n", 0o644)
		}, `Error: process "web" not present in job configuration (`, "bpm.stop.process-not-defined"},
	} {
		t.Run(name, func(t *testing.T) {
			r := newRoot(t)
			webJob(r)
			r.must("start", "web")
			exe := r.rep.Expect(t, "ready")
			init := r.pidFile("web", "web")
			c.breakIt(r)
			res := r.bpm("stop", "web")
			if res.code != 1 || !strings.HasPrefix(res.err, c.error) {
				t.Fatalf("%+v", res)
			}
			r.rep.Expect(t, "signal TERM")
			if !gone(exe.PID) || !gone(init) {
				t.Fatal("the process survived the stop")
			}
			if log := r.read(filepath.Join(r.layout.LogDir("web"), "bpm.log")); !strings.Contains(log, `"message":"`+c.logged+`"`) {
				t.Fatalf("bpm.log lacks %s:\n%s", c.logged, log)
			}
		})
	}
}

// TestStalePidFile: a pid file naming some other live process is never
// acted on; start replaces it.
func TestStalePidFile(t *testing.T) {
	r := newRoot(t)
	webJob(r)
	self, _ := os.Executable()
	other := exec.Command(self)
	other.Env = append(os.Environ(), testproc.EnvBehaviour+"=serve", testproc.EnvSocket+"="+r.rep.Path, "GORACE="+testproc.NoRaceExitDelay)
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer other.Wait()
	defer other.Process.Kill()
	r.rep.Expect(t, "ready")
	os.MkdirAll(r.layout.PidDir("web"), 0o700)
	if err := pidfile.Write(r.layout.PidFile("web", "web"), other.Process.Pid); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"pid", "web"}, {"quit", "web"}} {
		if res := r.bpm(args...); res.code != 1 || res.err != notRunning {
			t.Fatalf("bpm %v: %+v", args, res)
		}
	}
	if res := r.bpm("running", "web"); res.code != 1 || res.out != "no\n" {
		t.Fatalf("running: %+v", res)
	}
	r.must("stop", "web")
	// The stranger got no signal from bpm: the first it reports is ours.
	other.Process.Signal(unix.SIGUSR1)
	if ln := r.rep.Expect(t, "signal"); ln.PID != other.Process.Pid || ln.Text != "signal USR1" {
		t.Fatalf("the stranger reported %+v", ln)
	}
	if _, err := os.Stat(r.layout.PidFile("web", "web")); !os.IsNotExist(err) {
		t.Fatalf("stale pid file kept by stop: %v", err)
	}
	pidfile.Write(r.layout.PidFile("web", "web"), other.Process.Pid)
	r.must("start", "web")
	if got := r.inits("web", "web"); len(got) != 1 || got[0] != r.pidFile("web", "web") {
		t.Fatalf("inits %v, pid file %d", got, r.pidFile("web", "web"))
	}
}

func TestListAndVersion(t *testing.T) {
	modes(t, func(r *root) {
		webJob(r)
		r.job("multi", tp{name: "multi", behaviour: "serve"}, tp{name: "worker", behaviour: "serve"})
		r.errand("errand", "exit 0")
		r.write(r.layout.BPMConfig("broken"), "processes: [\n", 0o644)
	}, func(t *testing.T, r *root) {
		r.must("start", "web")
		r.must("start", "multi", "-p", "worker")
		res := r.bpm("list")
		want := regexp.MustCompile(`^Name +Pid +Status\n` +
			`errand +- +stopped\n` +
			`multi +(- +stopped|\d+ +running)\n` + // the daemon starts every process
			`multi\.worker +\d+ +running\n` +
			`web +\d+ +running\n$`)
		if res.code != 0 || !want.MatchString(res.out) {
			t.Fatalf("list: exit %d\n%s", res.code, res.out)
		}
		if !strings.HasPrefix(res.err, "invalid config for broken: ") {
			t.Fatalf("list stderr %q", res.err)
		}
		var rows []struct {
			Name, Job, Process, Status string
			PID                        int
			Ready                      *bool
		}
		if err := json.Unmarshal([]byte(r.must("list", "--json")), &rows); err != nil || len(rows) != 4 {
			t.Fatalf("list --json: %v %+v", err, rows)
		}
		if w := rows[3]; w.Name != "web" || w.PID != r.pidFile("web", "web") || w.Status != "running" {
			t.Fatalf("web row %+v", w)
		}
		// vigil's readiness comes from the daemon; bpm's own output has none.
		if w := rows[3]; (r.daemon != nil) != (w.Ready != nil) || (w.Ready != nil && !*w.Ready) {
			t.Fatalf("web row readiness %v with daemon %v", w.Ready, r.daemon != nil)
		}
		version := r.must("version")
		if version != "1.4.38+vigil."+testVersion+"\n" || r.must("--version") != version {
			t.Fatalf("version %q", version)
		}
	})
}

func TestInstall(t *testing.T) {
	r := newRoot(t)
	vigil := filepath.Join(binDir, "vigil")
	for range 2 {
		out, err := exec.Command(vigil, "install", "--root", r.layout.Root()).CombinedOutput()
		if err != nil {
			t.Fatalf("install: %v\n%s", err, out)
		}
	}
	link := filepath.Join(r.layout.JobDir("bpm"), "bin", "bpm")
	if target, err := os.Readlink(link); err != nil || target != vigil {
		t.Fatalf("%s -> %q (%v), want %s", link, target, err, vigil)
	}
	out, err := exec.Command(link, "--version").Output()
	if err != nil || string(out) != "1.4.38+vigil."+testVersion+"\n" {
		t.Fatalf("installed bpm --version: %q %v", out, err)
	}
	os.Remove(link)
	os.WriteFile(link, []byte("#!/bin/sh\n"), 0o755)
	if out, err := exec.Command(vigil, "install", "--root", r.layout.Root()).CombinedOutput(); err == nil {
		t.Fatalf("install replaced a regular file without --force: %s", out)
	}
}
