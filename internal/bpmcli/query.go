package bpmcli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/launch"
	"github.com/vigil-bosh/vigil/job"
)

// pid prints the pid-file pid of a running process.
func (c *cli) pid(t target, _ parsed) error {
	pid, err := c.runningPID(context.Background(), t)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.env.Stdout, "%d\n", pid)
	return nil
}

// running prints yes and succeeds when the process runs, else prints no and
// fails without an error message (container-run's extension).
func (c *cli) running(t target, _ parsed) error {
	s, err := c.stateOf(context.Background(), t)
	if err != nil {
		return err
	}
	if s.status == "running" {
		fmt.Fprintln(c.env.Stdout, "yes")
		return nil
	}
	fmt.Fprintln(c.env.Stdout, "no")
	return &exitError{code: 1}
}

// row is one line of bpm list.
type row struct {
	Name    string `json:"name"`
	Job     string `json:"job"`
	Process string `json:"process"`
	PID     int    `json:"pid"` // 0 when none
	Status  string `json:"status"`
	// vigil's additions, from the daemon (absent without one): health as
	// in vigil status ("starting", "healthy", "unhealthy") and readiness.
	Health string `json:"health,omitempty"`
	Ready  *bool  `json:"ready,omitempty"`
}

// list prints every process of every job with a bpm.yml, in job-name and
// then file order, with its state: bpm's table, or JSON with --json. The
// daemon's view comes first; processes it does not know are looked up in
// their pid files. Live inits whose job has no configuration any more are
// listed last. What else the daemon runs (monit checks with start
// programs) is not bpm's and is never listed. Invalid configurations are reported on stderr and do not
// change the exit status.
func (c *cli) list(_ target, fl parsed) error {
	rows := c.configuredRows()
	st, err := c.client().Status(context.Background())
	if err != nil && !errors.Is(err, control.ErrNoDaemon) {
		return err
	}
	index := func(t target) int {
		return slices.IndexFunc(rows, func(r row) bool { return r.Job == t.job && r.Process == t.proc })
	}
	for _, ps := range st.Processes {
		// The daemon's other processes are monit checks of their own
		// (start programs): bpm knows only its bpm.yml processes.
		i := index(target{job: ps.Job, proc: ps.Process})
		if i < 0 {
			continue
		}
		s := fromDaemon(ps)
		rows[i].Status, rows[i].PID = s.status, s.pid
		if ps.State == "running" {
			ready := ps.Ready
			rows[i].Health, rows[i].Ready = ps.Health, &ready
		}
	}
	for _, t := range c.pidFileTargets() {
		if i := index(t); i < 0 {
			rows = append(rows, row{Name: t.name(), Job: t.job, Process: t.proc}) // listed only if live
		}
	}
	for i := range rows {
		if rows[i].PID != 0 {
			continue
		}
		if it, err := launch.FindInit(c.layout, rows[i].Job, rows[i].Process); err == nil {
			rows[i].Status, rows[i].PID = "running", it.PID
			it.Close()
		}
	}
	// Pid files of processes that are neither configured nor running are
	// stale: they are not listed.
	rows = slices.DeleteFunc(rows, func(r row) bool { return r.Status == "" })
	if fl.bool("json") {
		enc := json.NewEncoder(c.env.Stdout)
		enc.SetIndent("", "  ")
		if rows == nil {
			rows = []row{}
		}
		return enc.Encode(rows)
	}
	out := bufio.NewWriter(c.env.Stdout) // one write, not one per line
	tw := tabwriter.NewWriter(out, 0, 0, 1, ' ', 0)
	fmt.Fprintln(tw, "Name\tPid\tStatus")
	for _, r := range rows {
		pid := "-"
		if r.PID != 0 {
			pid = fmt.Sprint(r.PID)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Name, pid, r.Status)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return out.Flush()
}

// configuredRows lists the processes of every job with a bpm.yml as
// stopped, reporting invalid configurations on stderr as bpm does.
func (c *cli) configuredRows() []row {
	entries, err := os.ReadDir(c.layout.JobsDir())
	if err != nil {
		return nil
	}
	var rows []row
	for _, e := range entries {
		if _, err := os.Stat(c.layout.BPMConfig(e.Name())); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		j, _, err := job.Load(c.layout, e.Name())
		if err != nil {
			fmt.Fprintf(c.env.Stderr, "invalid config for %s: %v\n", e.Name(), err)
			continue
		}
		for _, p := range j.Processes {
			t := target{job: j.Name, proc: p.Name}
			rows = append(rows, row{Name: t.name(), Job: t.job, Process: t.proc, Status: "stopped"})
		}
	}
	return rows
}

// pidFileTargets lists the processes that have a pid file.
func (c *cli) pidFileTargets() []target {
	files, _ := filepath.Glob(filepath.Join(c.layout.Root(), "sys", "run", "bpm", "*", "*.pid"))
	var out []target
	for _, f := range files {
		out = append(out, target{job: filepath.Base(filepath.Dir(f)), proc: strings.TrimSuffix(filepath.Base(f), ".pid")})
	}
	return out
}
