package release_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// stemcell is a stemcell's /var/vcap, /run, /etc/profile.d and
// /etc/systemd/system, kept in a temporary directory and mounted at their
// real paths in a private mount namespace for each command, so that the
// jobs' scripts run unchanged and the machine is never touched.
type stemcell struct {
	t   *testing.T
	dir string // vcap/, run/, profile.d/, systemd/, bin/ (commands put first on PATH)
}

// stemcellKind is a stemcell's monit layout.
type stemcellKind int

const (
	// jammy: systemd boots it, but runit runs the agent and monit, and the
	// agent restarts monit with sv; /var/vcap/bosh/bin/monit is a wrapper
	// of monit-actual.
	jammy stemcellKind = iota
	// noble: the agent's agent.json names systemd as its service manager
	// (systemctl kill and start monit); /var/vcap/bosh/bin/monit is monit.
	noble
)

// agentJSON is each line's /var/vcap/bosh/agent.json, as far as the
// release reads it (the stemcell builder writes one per IaaS).
var agentJSON = map[stemcellKind]string{
	jammy: `{"Platform": {"Linux": {"DevicePathResolutionType": "virtio"}}}`,
	noble: `{"Platform": {"Linux": {"DevicePathResolutionType": "virtio", "ServiceManager": "systemd"}}}`,
}

const stemcellMonit = "#!/bin/sh\necho \"the stemcell's monit $*\"\n"

func newStemcell(t *testing.T, kind stemcellKind) *stemcell {
	if os.Geteuid() != 0 {
		t.Skip("mounting the stemcell's paths needs root")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("needs unshare (util-linux)")
	}
	s := &stemcell{t: t, dir: t.TempDir()}
	for _, d := range []string{"vcap/bosh/bin", "run", "profile.d", "systemd", "bin"} {
		os.MkdirAll(filepath.Join(s.dir, d), 0o755)
	}
	// Both lines boot with systemd. systemctl stands in for it (the VM rig
	// runs the same scripts under a real one): it records each call;
	// vigil.service is active while vigil.pid names its main process.
	os.MkdirAll(filepath.Join(s.dir, "run", "systemd", "system"), 0o755)
	s.write("bin/systemctl", "#!/bin/sh\necho \"$@\" >>$S/systemctl.calls\ncase \"$*\" in\n"+
		"'-q is-active vigil.service') [ -s $S/vigil.pid ];;\n"+
		"'show -p MainPID --value vigil.service') cat $S/vigil.pid;;\nesac\n", 0o755)
	s.write("vcap/bosh/agent.json", agentJSON[kind], 0o644)
	switch kind {
	case jammy:
		s.write("vcap/bosh/bin/monit", "#!/bin/sh\n# the stemcell's wrapper\nexec /var/vcap/bosh/bin/monit-actual \"$@\"\n", 0o755)
		s.write("vcap/bosh/bin/monit-actual", stemcellMonit, 0o755)
	case noble:
		s.write("vcap/bosh/bin/monit", stemcellMonit, 0o755)
	}
	for _, u := range []string{"vigil.service", "monit.service"} {
		b, err := os.ReadFile(filepath.Join("..", "internal", "stemcell", u))
		if err != nil {
			t.Fatal(err)
		}
		s.write("vcap/packages/vigil/stemcell/"+u, string(b), 0o644) // as packaging installs them
	}
	s.write("vcap/packages/vigil/bin/vigil", "", 0o755)
	if err := copyFile(vigilBinary(t), filepath.Join(s.dir, "vcap/packages/vigil/bin/vigil")); err != nil {
		t.Fatal(err)
	}
	s.install("bpm", nil)
	return s
}

// install renders a job's templates to their places under /var/vcap/jobs.
func (s *stemcell) install(job string, props map[string]any) {
	s.t.Helper()
	for src, dest := range jobs(s.t)[job].Templates {
		s.write(filepath.Join("vcap/jobs", job, dest), render(s.t, job, src, props), 0o755)
	}
}

func (s *stemcell) write(rel, content string, mode os.FileMode) {
	s.t.Helper()
	p := filepath.Join(s.dir, rel)
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		s.t.Fatal(err)
	}
	os.Chmod(p, mode)
}

func (s *stemcell) read(rel string) string {
	b, _ := os.ReadFile(filepath.Join(s.dir, rel))
	return string(b)
}

// run runs script with bash as the agent runs a job's scripts (PATH
// /usr/sbin:/usr/bin:/sbin:/bin), with the stemcell's paths mounted.
func (s *stemcell) run(script string) (string, error) {
	setup := `set -e
mount --make-rprivate /
mount -t tmpfs tmpfs /var && mkdir /var/vcap && mount --bind "$S/vcap" /var/vcap
mount --bind "$S/run" /run
mount --bind "$S/profile.d" /etc/profile.d
mount --bind "$S/systemd" /etc/systemd/system
set +e
`
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "--", "bash", "-c", setup+script)
	cmd.Env = []string{"S=" + s.dir, "PATH=" + filepath.Join(s.dir, "bin") + ":/usr/sbin:/usr/bin:/sbin:/bin"}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func (s *stemcell) must(script string) string {
	s.t.Helper()
	out, err := s.run(script)
	if err != nil {
		s.t.Fatalf("%s: %v\n%s", script, err, out)
	}
	return out
}

// TestVigilTakesMonitsPlace: on a runit stemcell (Jammy: a wrapper runs
// monit-actual) and a systemd one (Noble), the vigil job's pre-start puts
// vigil behind /var/vcap/bosh/bin/monit, keeping the stemcell's binary;
// running it again changes nothing; vigil.supervisor false gives the
// stemcell's monit back; and once the job is gone the stemcell's monit
// runs, without any pre-start.
func TestVigilTakesMonitsPlace(t *testing.T) {
	for name, kind := range map[string]stemcellKind{"jammy": jammy, "noble": noble} {
		t.Run(name, func(t *testing.T) {
			s := newStemcell(t, kind)
			target := "vcap/bosh/bin/monit"
			if kind == jammy {
				target += "-actual"
			}
			if out := s.must("/var/vcap/bosh/bin/monit -V"); out != "the stemcell's monit -V\n" {
				t.Fatalf("before: %q", out)
			}
			s.install("vigil", nil)
			for range 2 { // the second run changes nothing
				s.must("/var/vcap/jobs/vigil/bin/pre-start")
				if got := s.read(target + ".stemcell"); got != stemcellMonit {
					t.Fatalf("the stemcell's monit was not kept: %q", got)
				}
				if !strings.Contains(s.read(target), "STEMCELL=/"+strings.Replace(target, "vcap/", "var/vcap/", 1)+".stemcell\n") {
					t.Fatalf("%s:\n%s", target, s.read(target))
				}
				if out := s.must("/var/vcap/bosh/bin/monit -V"); !strings.HasPrefix(out, "This is Monit version 5.2.5") {
					t.Fatalf("monit -V after the pre-start: %q", out)
				}
			}
			// vigil.supervisor false: the stemcell's files as they were.
			s.install("vigil", map[string]any{"vigil": map[string]any{"supervisor": false}})
			s.must("/var/vcap/jobs/vigil/bin/pre-start")
			if got := s.read(target); got != stemcellMonit {
				t.Fatalf("vigil.supervisor false left %q", got)
			}
			if _, err := os.Stat(filepath.Join(s.dir, target+".stemcell")); err == nil {
				t.Error("the backup is still there")
			}
			// Back to vigil, then the job is removed (as the agent does
			// when a deploy drops the release): the stemcell's monit runs.
			s.install("vigil", nil)
			s.must("/var/vcap/jobs/vigil/bin/pre-start")
			os.RemoveAll(filepath.Join(s.dir, "vcap/jobs/vigil"))
			if out := s.must("/var/vcap/bosh/bin/monit summary"); out != "the stemcell's monit summary\n" {
				t.Fatalf("monit without the vigil job: %q", out)
			}
		})
	}
}

// TestVigilNeedsItsOwnBPM: vigil as the supervisor runs bpm's processes
// itself, so the pre-start refuses an instance whose bpm is bpm-release's
// (its drain scripts would ask runc about processes runc never started),
// and leaves the stemcell's monit alone.
func TestVigilNeedsItsOwnBPM(t *testing.T) {
	s := newStemcell(t, jammy)
	s.write("vcap/jobs/bpm/bin/bpm", "#!/bin/bash\nulimit -n 524288\n/var/vcap/packages/bpm/bin/bpm \"$@\"\n", 0o755)
	s.install("vigil", nil)
	out, err := s.run("/var/vcap/jobs/vigil/bin/pre-start")
	if err == nil || !strings.Contains(out, "needs the bpm job of the vigil release") {
		t.Fatalf("pre-start with bpm-release's bpm: %v\n%s", err, out)
	}
	if s.read("vcap/bosh/bin/monit-actual") != stemcellMonit {
		t.Fatal("the stemcell's monit was changed")
	}
}

// TestBPMPreStart: the bpm job's pre-start makes bpm's log directory and
// puts bpm on login shells' PATH, as bpm-release's does.
func TestBPMPreStart(t *testing.T) {
	s := newStemcell(t, noble)
	s.must("/var/vcap/jobs/bpm/bin/pre-start")
	if fi, err := os.Stat(filepath.Join(s.dir, "vcap/sys/log/bpm")); err != nil || !fi.IsDir() {
		t.Fatalf("bpm's log directory: %v", err)
	}
	if out := s.must(". /etc/profile.d/bpm.sh; command -v bpm"); out != "/var/vcap/jobs/bpm/bin/bpm\n" {
		t.Fatalf("bpm on a login shell's PATH: %q", out)
	}
}

var vigilOnce struct {
	sync.Once
	path string
	err  error
	out  []byte
}

// vigilBinary builds vigil once for the package's tests.
func vigilBinary(t *testing.T) string {
	vigilOnce.Do(func() {
		dir, err := os.MkdirTemp("", "release-vigil")
		if err != nil {
			vigilOnce.err = err
			return
		}
		vigilOnce.path = filepath.Join(dir, "vigil")
		cmd := exec.Command("go", "build", "-o", vigilOnce.path, "../cmd/vigil")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		vigilOnce.out, vigilOnce.err = cmd.CombinedOutput()
	})
	if vigilOnce.err != nil {
		t.Fatalf("build vigil: %v\n%s", vigilOnce.err, vigilOnce.out)
	}
	return vigilOnce.path
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o755)
}
