package main

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// supervisorDriver runs supervisord in the foreground with numprocs copies
// of one program (plus a separate program for the TERM-ignoring child).
// Everything else is left at supervisord's defaults: startsecs 1,
// startretries 3, autorestart unexpected, stopwaitsecs 10 then KILL.
type supervisorDriver struct {
	conf string
}

func (d *supervisorDriver) Setup(s spec) error {
	d.conf = filepath.Join(s.Dir, "supervisord.conf")
	sock := filepath.Join(s.Dir, "supervisor.sock")
	var b strings.Builder
	fmt.Fprintf(&b, "[unix_http_server]\nfile=%s\n\n", sock)
	fmt.Fprintf(&b, "[supervisord]\nnodaemon=true\nlogfile=%s\npidfile=%s\nchilddir=%s\nchildlogdir=%s\nminfds=16384\n\n",
		filepath.Join(s.Dir, "supervisord.log"), filepath.Join(s.Dir, "supervisord.pid"), s.Dir, s.Dir)
	fmt.Fprintf(&b, "[rpcinterface:supervisor]\nsupervisor.rpcinterface_factory = supervisor.rpcinterface:make_main_rpcinterface\n\n")
	fmt.Fprintf(&b, "[supervisorctl]\nserverurl=unix://%s\n\n", sock)

	program := func(section, procName string, numprocs int, env []string) {
		fmt.Fprintf(&b, "[program:%s]\ncommand=%s\n", section, s.Child)
		if numprocs > 1 {
			fmt.Fprintf(&b, "numprocs=%d\nprocess_name=%s\n", numprocs, procName)
		}
		var kv []string
		for _, e := range env {
			k, v, _ := strings.Cut(e, "=")
			kv = append(kv, fmt.Sprintf("%s=%q", k, v))
		}
		fmt.Fprintf(&b, "environment=%s\nstdout_logfile=NONE\nstderr_logfile=NONE\n\n", strings.Join(kv, ","))
	}
	plainN := s.N
	if s.Variant == ignoreLast {
		plainN--
		program(s.name(s.N-1), "", 1, s.env(s.N-1))
	}
	if plainN > 0 {
		program("p", "p%(process_num)04d", plainN, s.env(0))
	}
	return writeFile(d.conf, b.String(), 0o644)
}

func (d *supervisorDriver) Command() *exec.Cmd {
	return exec.Command("supervisord", "-n", "-c", d.conf)
}

func (d *supervisorDriver) Status(ctx context.Context) (time.Duration, error) {
	_, took, err := timed(ctx, 30*time.Second, "supervisorctl", "-c", d.conf, "status")
	return took, err
}

func (d *supervisorDriver) StopAll(ctx context.Context) error {
	return run(ctx, 120*time.Second, "supervisorctl", "-c", d.conf, "stop", "all")
}

func (d *supervisorDriver) Shutdown(_ context.Context, pid int) error {
	return terminate(pid, "supervisord")
}

func (d *supervisorDriver) StopNote() string {
	return "`supervisorctl stop all` waits for every process; TERM, then KILL after stopwaitsecs (10 s)"
}

func (d *supervisorDriver) Paced() bool { return false }
