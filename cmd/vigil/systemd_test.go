package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/vigil-bosh/vigil/internal/pidfile"
	"github.com/vigil-bosh/vigil/internal/testproc"
)

func TestChooseBackend(t *testing.T) {
	yes, no := func() bool { return true }, func() bool { return false }
	for _, c := range []struct {
		flag   string
		booted func() bool
		euid   int
		want   string
	}{
		{"auto", yes, 0, "systemd"}, {"auto", yes, 1000, "native"}, {"auto", no, 0, "native"},
		{"", yes, 0, "systemd"}, {"native", yes, 0, "native"}, {"systemd", no, 1000, "systemd"},
	} {
		if got, err := chooseBackend(&command{spec: &spec{name: "daemon"}}, c.flag, c.booted, c.euid); err != nil || got != c.want {
			t.Errorf("chooseBackend(%q, %v) = %q, %v; want %q", c.flag, c.euid, got, err, c.want)
		}
	}
	if _, err := chooseBackend(&command{spec: &spec{name: "daemon"}}, "runit", yes, 0); err == nil {
		t.Error("no error for an unknown backend")
	}
}

func TestSystemdGenerate(t *testing.T) {
	c := newCLI(t)
	out := t.TempDir()
	foreign := filepath.Join(out, "garden.service")
	os.WriteFile(foreign, []byte("[Service]\nDelegate=yes\n"), 0o644)
	first, code := c.run("systemd", "generate", "--out", out, "--vigil", "/usr/bin/vigil")
	if code != 0 || strings.Count(first, "wrote ") != 3 {
		t.Fatalf("first generate: %d %s", code, first)
	}
	again, code := c.run("systemd", "generate", "--out", out, "--vigil", "/usr/bin/vigil")
	if code != 0 || again != "" {
		t.Errorf("second generate changed something: %d %q", code, again)
	}
	unit, _ := os.ReadFile(filepath.Join(out, "vigil-web-a.service"))
	if !strings.Contains(string(unit), `ExecStart=+"/usr/bin/vigil" "exec" "--root" "`+c.root+`" "web" "a"`) {
		t.Errorf("unit:\n%s", unit)
	}
	os.RemoveAll(filepath.Join(c.root, "jobs", "web"))
	gone, _ := c.run("systemd", "generate", "--out", out)
	if strings.Count(gone, "removed ") != 3 {
		t.Errorf("removal: %s", gone)
	}
	if b, err := os.ReadFile(foreign); err != nil || !strings.Contains(string(b), "Delegate=yes") {
		t.Errorf("foreign unit touched: %q %v", b, err)
	}
}

// TestExec runs a generated unit's ExecStart by hand: the process runs
// under vigil's init, whose pid is in the pid file, and a TERM stops it.
func TestExec(t *testing.T) {
	c := newCLI(t)
	cmd := exec.Command(vigilBin, "exec", "--root", c.root, "web", "a")
	cmd.Env = append(os.Environ(), "VIGIL_ISOLATION=off")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pidPath := filepath.Join(c.root, "sys", "run", "bpm", "web", "a.pid")
	logPath := filepath.Join(c.root, "sys", "log", "web", "a.stdout.log")
	var pid int
	testproc.WaitUntil(t, filepath.Dir(pidPath), func() bool { pid, _ = pidfile.Read(pidPath); return pid != 0 })
	testproc.WaitUntil(t, filepath.Dir(logPath), func() bool { // its TERM trap is set once it printed
		b, _ := os.ReadFile(logPath)
		return strings.Contains(string(b), "started one")
	})
	if pid == 0 || pid == cmd.Process.Pid || syscall.Kill(pid, 0) != nil {
		t.Fatalf("pid file %s: %d (vigil exec is %d)", pidPath, pid, cmd.Process.Pid)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Errorf("vigil exec after TERM: %v", err)
	}
	if _, err := os.Stat(pidPath); !os.IsNotExist(err) {
		t.Errorf("pid file left: %v", err)
	}
	log, _ := os.ReadFile(filepath.Join(c.root, "sys", "log", "web", "a.stdout.log"))
	if !strings.Contains(string(log), "started one") {
		t.Errorf("stdout log: %q", log)
	}
}

// TestDaemonSystemdBackend runs `vigil daemon --backend systemd` against
// a fake systemctl and reads the backend back from `vigil status`.
func TestDaemonSystemdBackend(t *testing.T) {
	c := newCLI(t)
	dir := t.TempDir()
	fake := filepath.Join(dir, "systemctl")
	os.WriteFile(fake, []byte(`#!/bin/sh
echo "$@" >> `+dir+`/calls
[ "$1" = show ] || exit 0
shift 3
for u; do printf 'Id=%s\nActiveState=active\nSubState=running\n\n' "$u"; done
`), 0o755)
	units := filepath.Join(dir, "units")
	cmd := exec.Command(vigilBin, "daemon", "--root", c.root, "--backend", "systemd", "--systemctl", fake, "--unit-dir", units)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil {
			t.Errorf("daemon: %v", err)
		}
	}()
	// The daemon has settled once it asked systemctl to start the units.
	callsPath := filepath.Join(dir, "calls")
	startLine := "start -- vigil-web-a.service vigil-web-b.service\n"
	testproc.WaitUntil(t, dir, func() bool { b, _ := os.ReadFile(callsPath); return strings.Contains(string(b), startLine) })
	out, code := c.run("status")
	if code != 0 || !strings.Contains(out, "backend: systemd") || strings.Count(out, "running") != 2 {
		t.Fatalf("status: %d %s", code, out)
	}
	calls, _ := os.ReadFile(callsPath)
	reload := strings.Index(string(calls), "daemon-reload\n")
	if start := strings.Index(string(calls), startLine); reload < 0 || start < reload {
		t.Errorf("systemctl calls (want daemon-reload before the start):\n%s", calls)
	}
}
