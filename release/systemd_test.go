package release_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	marker   = "# installed by the vigil BOSH job\n"
	guard    = "/var/vcap/bosh/bin/vigil-monit-service"
	dropIn   = "systemd/monit.service.d/vigil.conf"
	calls    = "systemctl.calls"
	isActive = "-q is-active vigil.service\n"
)

// calls returns the systemctl calls made since the last look, and forgets
// them.
func (s *stemcell) calls() string {
	got := s.read(calls)
	os.Remove(filepath.Join(s.dir, calls))
	return got
}

// execStart is the command of the installed drop-in over monit.service
// (its last ExecStart=).
func (s *stemcell) execStart() string {
	cmd := ""
	for _, l := range strings.Split(s.read(dropIn), "\n") {
		if v, ok := strings.CutPrefix(l, "ExecStart="); ok {
			cmd = v
		}
	}
	return cmd
}

func (s *stemcell) absent(rel string) {
	s.t.Helper()
	if _, err := os.Lstat(filepath.Join(s.dir, rel)); err == nil {
		s.t.Errorf("%s is still there", rel)
	}
}

// TestSystemdStemcellUnits: on a systemd stemcell the vigil job's
// pre-start installs the package's vigil.service and, as a drop-in over
// the stemcell's monit.service, its monit.service, whose command goes
// through the guard that outlives the job; a second run changes nothing;
// a daemon running another build, or a changed vigil.service, is
// restarted; with vigil.supervisor false, and once the job is removed,
// the guard, as monit.service runs it, gives monit.service back: the
// units gone, systemd reloaded before the daemon stops.
func TestSystemdStemcellUnits(t *testing.T) {
	s := newStemcell(t, noble)
	shipped := func(u string) string {
		b, err := os.ReadFile(filepath.Join("..", "internal", "stemcell", u))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	s.install("vigil", nil)
	s.must("/var/vcap/jobs/vigil/bin/pre-start")
	if got := s.read("systemd/vigil.service"); got != marker+shipped("vigil.service") {
		t.Errorf("vigil.service:\n%s", got)
	}
	want := marker + strings.Replace(shipped("monit.service"), "\nExecStart=/var/vcap/packages/vigil/",
		"\nExecStart="+guard+" /var/vcap/packages/vigil/", 1)
	if got := s.read(dropIn); got != want {
		t.Errorf("monit.service's drop-in:\n%s\nwant:\n%s", got, want)
	}
	if cmd := s.execStart(); cmd != guard+" /var/vcap/packages/vigil/bin/vigil monit-service --root /var/vcap" {
		t.Errorf("monit.service runs %q", cmd)
	}
	if g := s.read("vcap/bosh/bin/vigil-monit-service"); !strings.Contains(g, marker) || !strings.HasPrefix(g, "#!/bin/bash\n") {
		t.Errorf("the guard:\n%s", g)
	}
	if got := s.calls(); got != "daemon-reload\n"+isActive {
		t.Errorf("systemctl calls %q, want a daemon-reload", got)
	}
	s.must("/var/vcap/jobs/vigil/bin/pre-start")
	if got := s.calls(); got != isActive {
		t.Errorf("a second pre-start called systemctl %q, want nothing changed", got)
	}
	// The guard runs vigil while the job asks for it.
	if out := s.must(guard + " /var/vcap/packages/vigil/bin/vigil version"); out != "vigil dev\n" {
		t.Errorf("the guard with vigil.supervisor true: %q", out)
	}

	// A daemon of another build (a new package) is restarted; one of this
	// package's build is not.
	s.must(`sleep 600 & echo $! >$S/vigil.pid; /var/vcap/jobs/vigil/bin/pre-start; kill $!`)
	if got := s.calls(); got != isActive+"show -p MainPID --value vigil.service\nrestart vigil.service\n" {
		t.Errorf("pre-start beside another build's daemon: systemctl %q, want a restart", got)
	}
	s.must(`/var/vcap/packages/vigil/bin/vigil monit-service --root /var/vcap --wait 1h 2>/dev/null & echo $! >$S/vigil.pid
/var/vcap/jobs/vigil/bin/pre-start; kill $!`)
	if got := s.calls(); strings.Contains(got, "restart") {
		t.Errorf("pre-start beside this package's daemon: systemctl %q, want no restart", got)
	}
	os.Remove(filepath.Join(s.dir, "vigil.pid"))

	// vigil.supervisor false: the pre-start leaves the units (the agent
	// reads the API, which the daemon serves, before its kill of monit);
	// the agent's start of monit.service runs the guard, which gives back.
	s.install("vigil", map[string]any{"vigil": map[string]any{"supervisor": false}})
	s.must("/var/vcap/jobs/vigil/bin/pre-start")
	if got := s.calls(); got != "" || s.read("systemd/vigil.service") == "" {
		t.Errorf("the pre-start with vigil.supervisor false called systemctl %q or removed vigil.service", got)
	}
	out := s.must(`sleep 600 & echo $! >$S/vigil.pid; ` + s.execStart() + `; echo "exit $?"; kill $!`)
	if !strings.HasSuffix(out, "monit.service is the stemcell's again\nexit 0\n") {
		t.Errorf("the guard with vigil.supervisor false: %q", out)
	}
	s.absent("systemd/vigil.service")
	s.absent("systemd/monit.service.d")
	if got := s.calls(); got != "daemon-reload\n"+isActive+"stop vigil.service\n" {
		t.Errorf("giving back: systemctl %q, want a daemon-reload, then the stop", got)
	}

	// Back to vigil, then a deploy removes the job and its package: the
	// agent's start of monit.service runs the guard, which gives back.
	s.install("vigil", nil)
	s.must("/var/vcap/jobs/vigil/bin/pre-start")
	cmd := s.execStart()
	s.calls()
	os.RemoveAll(filepath.Join(s.dir, "vcap/jobs/vigil"))
	os.RemoveAll(filepath.Join(s.dir, "vcap/packages/vigil"))
	out = s.must(`sleep 600 & echo $! >$S/vigil.pid; ` + cmd + `; echo "exit $?"; kill $!`)
	if !strings.HasSuffix(out, "monit.service is the stemcell's again\nexit 0\n") {
		t.Errorf("the guard without the job: %q", out)
	}
	s.absent("systemd/vigil.service")
	s.absent("systemd/monit.service.d")
	if got := s.calls(); got != "daemon-reload\n"+isActive+"stop vigil.service\n" {
		t.Errorf("the guard giving back: systemctl %q", got)
	}
	if out := s.must("/var/vcap/bosh/bin/monit summary"); out != "the stemcell's monit summary\n" {
		t.Errorf("monit without the vigil job: %q", out)
	}
}

// TestRunitStemcellHasNoUnits: Jammy boots with systemd as well, but its
// agent restarts monit with runit's sv, so the vigil job's pre-start
// installs no unit and calls no systemctl; the stemcell's monit service
// runs vigil's daemon through the file that replaced its monit. The same
// rendered job on Noble installs the units (TestSystemdStemcellUnits).
func TestRunitStemcellHasNoUnits(t *testing.T) {
	s := newStemcell(t, jammy)
	s.install("vigil", nil)
	out := s.must("/var/vcap/jobs/vigil/bin/pre-start")
	if got := s.calls(); got != "" {
		t.Errorf("the pre-start called systemctl on a runit stemcell: %q", got)
	}
	s.absent("systemd/vigil.service")
	s.absent("systemd/monit.service.d")
	s.absent("vcap/bosh/bin/vigil-monit-service")
	if !strings.Contains(out, "the agent restarts monit with runit's sv") {
		t.Errorf("the pre-start does not say which stemcell line it found:\n%s", out)
	}
}
