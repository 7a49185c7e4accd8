package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// vigilDriver runs `vigil daemon` over a BOSH-style root with one job,
// "bench", whose bpm.yml lists every child as a process. With isolated,
// the processes are isolated as bpm isolates them (vigil's default as
// root); otherwise isolation is off, as the peers isolate nothing.
type vigilDriver struct {
	bin      string
	root     string
	n        int
	isolated bool
}

const vigilJob = "bench"

// vigilIsolated names vigil with isolation on among the supervisors.
const vigilIsolated = "vigil-iso"

func isVigil(p string) bool { return p == "vigil" || p == vigilIsolated }

// bpmYAML renders the job's bpm.yml for children running exe: the env map
// is the child's whole environment. With disk, each process has its
// ephemeral disk (ROOT/data/JOB, where the isolated children find the
// report socket); a user, if given, is vigil's user key.
func bpmYAML(s spec, exe string, disk bool, user string) string {
	var b strings.Builder
	b.WriteString("processes:\n")
	for i := range s.N {
		fmt.Fprintf(&b, "- name: %s\n  executable: %s\n", s.name(i), strconv.Quote(exe))
		if disk {
			b.WriteString("  ephemeral_disk: true\n")
		}
		if user != "" {
			fmt.Fprintf(&b, "  user: %s\n", user)
		}
		b.WriteString("  env:\n")
		for _, kv := range s.env(i) {
			k, v, _ := strings.Cut(kv, "=")
			fmt.Fprintf(&b, "    %s: %s\n", k, strconv.Quote(v))
		}
	}
	return b.String()
}

// rootOf is the BOSH root of the instance in dir.
func rootOf(dir string) string { return filepath.Join(dir, "root") }

// reportPath puts the report socket where an isolated child sees it: in
// the job's ephemeral disk, which its sandbox mounts. Without isolation
// the default (in the instance directory) does.
func (d *vigilDriver) reportPath(dir string) string {
	if !d.isolated {
		return ""
	}
	return filepath.Join(rootOf(dir), "data", vigilJob, "report.sock")
}

// Setup writes the job. An isolated child's executable must be inside its
// sandbox, so the child is copied into ROOT/packages, which it mounts.
func (d *vigilDriver) Setup(s spec) error {
	d.root = rootOf(s.Dir)
	d.n = s.N
	exe := s.Child
	if d.isolated {
		exe = filepath.Join(d.root, "packages", vigilJob, "bin", "child")
		b, err := os.ReadFile(s.Child)
		if err != nil {
			return fmt.Errorf("read child: %w", err)
		}
		if err := writeFile(exe, string(b), 0o755); err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(d.reportPath(s.Dir)), 0o755); err != nil {
			return fmt.Errorf("data dir: %w", err)
		}
	}
	return writeFile(filepath.Join(d.root, "jobs", vigilJob, "config", "bpm.yml"), bpmYAML(s, exe, d.isolated, d.user()), 0o644)
}

// user is the identity of isolated processes: bpm's vcap where it exists,
// else nobody (vigil refuses to start a process whose user is missing).
func (d *vigilDriver) user() string {
	if !d.isolated {
		return ""
	}
	if _, err := user.Lookup("vcap"); err == nil {
		return ""
	}
	return "nobody"
}

// Command runs the daemon; without isolated, with isolation off (the
// peers isolate nothing).
func (d *vigilDriver) Command() *exec.Cmd {
	cmd := exec.Command(d.bin, "daemon", "--root", d.root)
	cmd.Env = baseEnv()
	if !d.isolated {
		cmd.Env = append(cmd.Env, "VIGIL_ISOLATION=off")
	}
	return cmd
}

// Status runs `vigil status`, the table an operator reads, and checks
// that it lists every process, so that a fast but empty answer does not
// count.
func (d *vigilDriver) Status(ctx context.Context) (time.Duration, error) {
	out, took, err := timed(ctx, 30*time.Second, d.bin, "status", "--root", d.root)
	if err != nil {
		return took, err
	}
	if rows := statusRows(out, vigilJob); rows != d.n {
		return took, fmt.Errorf("vigil status listed %d processes, want %d", rows, d.n)
	}
	return took, nil
}

// statusRows counts the rows of vigil's status table that are job's
// processes.
func statusRows(table, job string) int {
	n := 0
	for _, line := range strings.Split(table, "\n") {
		if f := strings.Fields(line); len(f) > 2 && f[0] == job {
			n++
		}
	}
	return n
}

func (d *vigilDriver) StopAll(ctx context.Context) error {
	return run(ctx, 120*time.Second, d.bin, "stop", vigilJob, "--root", d.root)
}

func (d *vigilDriver) Shutdown(_ context.Context, pid int) error {
	return terminate(pid, "vigil daemon")
}

func (d *vigilDriver) StopNote() string {
	return "`vigil stop JOB` blocks until stopped; ladder TERM, QUIT after 15 s, KILL 2 s later"
}

func (d *vigilDriver) Paced() bool { return false }

// ExtraPids returns the per-process inits named by the pid files at
// ROOT/sys/run/bpm/JOB/PROC.pid, so they count even if they are not below
// the daemon in the process tree.
func (d *vigilDriver) ExtraPids() []int {
	files, _ := filepath.Glob(filepath.Join(d.root, "sys", "run", "bpm", "*", "*.pid"))
	var out []int
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
			out = append(out, pid)
		}
	}
	return out
}
