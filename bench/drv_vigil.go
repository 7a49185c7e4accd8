package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// vigilDriver runs `vigil daemon` over a BOSH-style root with one job,
// "bench", whose bpm.yml lists every child as a process.
type vigilDriver struct {
	bin  string
	root string
	n    int
}

const vigilJob = "bench"

// bpmYAML renders the job's bpm.yml: the env map is the child's whole
// environment.
func bpmYAML(s spec) string {
	var b strings.Builder
	b.WriteString("processes:\n")
	for i := range s.N {
		fmt.Fprintf(&b, "- name: %s\n  executable: %s\n  env:\n", s.name(i), strconv.Quote(s.Child))
		for _, kv := range s.env(i) {
			k, v, _ := strings.Cut(kv, "=")
			fmt.Fprintf(&b, "    %s: %s\n", k, strconv.Quote(v))
		}
	}
	return b.String()
}

func (d *vigilDriver) Setup(s spec) error {
	d.root = filepath.Join(s.Dir, "root")
	d.n = s.N
	return writeFile(filepath.Join(d.root, "jobs", vigilJob, "config", "bpm.yml"), bpmYAML(s), 0o644)
}

// Command runs the daemon with isolation off: the peers isolate nothing,
// and the harness's report socket and child live in a temporary directory
// that an isolated process would not see. The cost of isolation is measured
// apart (see bench/README.md).
func (d *vigilDriver) Command() *exec.Cmd {
	cmd := exec.Command(d.bin, "daemon", "--root", d.root)
	cmd.Env = append(baseEnv(), "VIGIL_ISOLATION=off")
	return cmd
}

// Status runs `vigil status --json` and checks that it parses and lists
// every process, so a fast but empty answer does not count.
func (d *vigilDriver) Status(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, d.bin, "status", "--json", "--root", d.root)
	cmd.Env = baseEnv()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("vigil status: %w: %s", err, tail(errb.String(), 160))
	}
	var st struct {
		Processes []struct {
			Job, Process, State string
		} `json:"processes"`
	}
	if err := json.Unmarshal(out.Bytes(), &st); err != nil {
		return fmt.Errorf("vigil status output: %w", err)
	}
	if len(st.Processes) != d.n {
		return fmt.Errorf("vigil status listed %d processes, want %d", len(st.Processes), d.n)
	}
	return nil
}

func (d *vigilDriver) StopAll(ctx context.Context) error {
	return run(ctx, 120*time.Second, d.bin, "stop", vigilJob, "--root", d.root)
}

func (d *vigilDriver) Shutdown(_ context.Context, pid int) error {
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return fmt.Errorf("signal vigil daemon: %w", err)
	}
	return nil
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
