package stemcell

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// keys returns the values of key in a unit's text, in order (comments
// skipped).
func keys(text, key string) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(l, key+"="); ok {
			out = append(out, v)
		}
	}
	return out
}

func unit(t *testing.T, units []Unit, name string) string {
	t.Helper()
	for _, u := range units {
		if u.Name == name {
			return u.Text
		}
	}
	t.Fatalf("no %s in %v", name, units)
	return ""
}

// TestUnits: the settings the stemcell's contract rests on. vigil.service
// holds the jobs (delegated, a stop reaching the daemon alone, never
// started at boot on its own); monit.service is one client process that
// needs vigil.service, is ready once its reload is done, restarts when
// killed, and works as a drop-in over the stemcell's unit (its ExecStart
// list reset first).
func TestUnits(t *testing.T) {
	us := Units()
	if len(us) != 2 || us[0].Name != "vigil.service" || us[1].Name != "monit.service" {
		t.Fatalf("units %v", us)
	}
	v, m := unit(t, us, "vigil.service"), unit(t, us, "monit.service")
	for key, want := range map[string]string{
		"ExecStart":        Binary + " daemon --root " + Root + " --backend native --leave-running-unless-stopping",
		"Delegate":         "yes",
		"DelegateSubgroup": "supervisor",
		"KillMode":         "process",
		"Restart":          "always",
		"Nice":             "-10",
		// never refuse a start: the VM's supervisor
		"StartLimitIntervalSec": "0",
	} {
		if got := keys(v, key); len(got) != 1 || got[0] != want {
			t.Errorf("vigil.service %s=%q, want %q", key, got, want)
		}
	}
	for key, want := range map[string][]string{
		"ExecStart": {"", Binary + " monit-service --root " + Root},
		"Requires":  {"vigil.service"},
		"After":     {"vigil.service"},
		// ready once the daemon has re-read the files (monit-service
		// notifies), so the agent's first read finds the new incarnation
		"Type":         {"notify"},
		"NotifyAccess": {"main"},
		"KillMode":     {"control-group"},
		"Restart":      {"always"},
		// the agent's reloads in a row must never be refused
		"StartLimitIntervalSec": {"0"},
	} {
		if got := keys(m, key); strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("monit.service %s=%q, want %q", key, got, want)
		}
	}
	for _, u := range us {
		if strings.Contains("\n"+u.Text, "\n[Install]") {
			t.Errorf("%s has an [Install] section: it would start before the agent mounts the disks", u.Name)
		}
	}
}

// TestRender: another binary and root replace the shipped ones in every
// setting (comments keep theirs); a path systemd would split or expand is
// refused.
func TestRender(t *testing.T) {
	us, err := Render("/opt/vigil/bin/vigil", "/srv/bosh/")
	if err != nil {
		t.Fatal(err)
	}
	v, m := unit(t, us, "vigil.service"), unit(t, us, "monit.service")
	if got := keys(v, "ExecStart"); len(got) != 1 || got[0] != "/opt/vigil/bin/vigil daemon --root /srv/bosh --backend native --leave-running-unless-stopping" {
		t.Errorf("vigil.service ExecStart %q", got)
	}
	if got := keys(v, "Environment"); len(got) != 1 || !strings.HasPrefix(got[0], "PATH=/srv/bosh/bosh/bin:") {
		t.Errorf("vigil.service Environment %q", got)
	}
	if got := keys(m, "ExecStart"); len(got) != 2 || got[1] != "/opt/vigil/bin/vigil monit-service --root /srv/bosh" {
		t.Errorf("monit.service ExecStart %q", got)
	}
	for _, u := range us {
		for _, l := range strings.Split(u.Text, "\n") {
			if !strings.HasPrefix(l, "#") && strings.Contains(l, Root) {
				t.Errorf("%s still names %s: %s", u.Name, Root, l)
			}
		}
	}
	for _, bad := range [][2]string{{"vigil", "/srv"}, {"/opt/my vigil", "/srv"}, {"/opt/vigil", "/srv/%n"}, {"/opt/vigil", "/srv/a\"b"}, {"/opt/vigil", "srv"}} {
		if _, err := Render(bad[0], bad[1]); err == nil {
			t.Errorf("Render(%q, %q) accepted", bad[0], bad[1])
		}
	}
}

// TestVerify: systemd-analyze verify accepts both units (monit.service
// as a whole unit, as vigil install writes it).
func TestVerify(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is missing (apt-get install systemd; .ci/run installs it): units not verified")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "vigil")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	us, err := Render(bin, dir)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, u := range us {
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
		// systemd before 254 (Debian 12's 252) does not know
		// DelegateSubgroup=; the VM rig runs the units on a newer one.
		if line != "" && !strings.Contains(line, "Unknown key 'DelegateSubgroup'") {
			complaints = append(complaints, line)
		}
	}
	if err != nil || len(complaints) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, strings.Join(complaints, "\n"))
	}
}
