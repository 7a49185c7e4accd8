package monitdiff

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// step carries out one step of the scenario.
func (r *run) step(ctx context.Context, st Step) error {
	switch st.Verb {
	case "ticks":
		n, _ := strconv.Atoi(st.Args[0])
		return r.clock.wait(ctx, n)
	case "snapshot":
		return r.snapshot(ctx, strings.Join(st.Args, " "))
	case "programs":
		fmt.Fprintf(&r.out, "\n## programs %s\n", strings.Join(st.Args, " "))
		progs, err := r.programs()
		writeBlock(&r.out, "programs", progs)
		return err
	case "monit":
		return r.command(ctx, st.Args)
	case "kill":
		return r.kill(st.Args[0])
	case "sh":
		fmt.Fprintf(&r.out, "\n## sh %s\n", st.Args[0])
		cmd := exec.CommandContext(ctx, "/bin/sh", "-c", st.Args[0])
		cmd.Env, cmd.Dir = r.env(), r.root
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("sh %q: %w: %s", st.Args[0], err, out)
		}
		return nil
	case "listen":
		return r.listen(st.Args[0])
	case "unlisten":
		fmt.Fprintf(&r.out, "\n## unlisten %s\n", st.Args[0])
		if s := r.served[st.Args[0]]; s != nil {
			s.Close()
			delete(r.served, st.Args[0])
		}
		return nil
	case "restart-daemon":
		// As the agent reloads monit: kill it, start a new one.
		fmt.Fprintf(&r.out, "\n## restart-daemon\n")
		if r.daemon != nil {
			r.killDaemon()
		}
		return r.startDaemon()
	}
	return fmt.Errorf("unknown step %q", st.Verb)
}

// killDaemon kills the daemon outright (the reaper's child), as the agent
// does to reload monit, and waits for the reaper to end with it.
func (r *run) killDaemon() {
	// Any of the reaper's threads may have forked the daemon; its other
	// children are orphans it reaps, the services among them.
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", r.daemon.Process.Pid))
	for _, t := range tasks {
		kids, _ := os.ReadFile(t)
		for _, f := range strings.Fields(string(kids)) {
			pid, err := strconv.Atoi(f)
			if err != nil {
				continue
			}
			argv, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			if first, _, _ := bytes.Cut(argv, []byte{0}); string(first) == r.o.Monit {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
	r.clock.release()
	<-r.exited
	r.daemon = nil
}

// kill sends SIGKILL to the process run/NAME.pid names.
func (r *run) kill(name string) error {
	fmt.Fprintf(&r.out, "\n## kill %s\n", name)
	b, err := os.ReadFile(filepath.Join(r.root, "run", name+".pid"))
	if err != nil {
		return fmt.Errorf("kill %s: %w", name, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		return fmt.Errorf("kill %s: bad pid file %q", name, b)
	}
	// Wait until the reaper has reaped it (its parent, the start program,
	// has ended: the daemon's reaper is its parent now), so the daemon's
	// next look at it cannot find it alive, nor a zombie.
	reaped := r.reaped.wait(pid)
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return fmt.Errorf("kill %s: %w", name, err)
	}
	defer unix.Close(fd)
	if err := unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0); err != nil {
		return fmt.Errorf("kill %s: %w", name, err)
	}
	t := time.NewTimer(tickWait)
	defer t.Stop()
	select {
	case <-reaped:
		return nil
	case <-t.C:
		return fmt.Errorf("kill %s: pid %d not reaped within %s", name, pid, tickWait)
	}
}

// listen serves HTTP 200 on the port of name until unlisten.
func (r *run) listen(name string) error {
	fmt.Fprintf(&r.out, "\n## listen %s\n", name)
	port, ok := r.ports[name]
	if !ok {
		return fmt.Errorf("no {{port:%s}} in the files", name)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("listen %s: %w", name, err)
	}
	s := &http.Server{ReadHeaderTimeout: time.Minute, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok\n")
	})}
	go func() { _ = s.Serve(ln) }()
	r.served[name] = s
	return nil
}

// command runs the monit command line and writes down what it printed.
func (r *run) command(ctx context.Context, args []string) error {
	out, errOut, code, err := r.cli(ctx, args...)
	if err != nil {
		return err
	}
	fmt.Fprintf(&r.out, "\n## monit %s\nexit %d\n", strings.Join(args, " "), code)
	writeBlock(&r.out, "stdout", out)
	writeBlock(&r.out, "stderr", errOut)
	return nil
}

func (r *run) cli(ctx context.Context, args ...string) (stdout, stderr string, code int, err error) {
	cmd := exec.CommandContext(ctx, r.o.Monit, append([]string{"-c", r.monitrc()}, args...)...)
	cmd.Env, cmd.Dir = r.env(), r.root
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return o.String(), e.String(), ee.ExitCode(), nil
	}
	if err != nil {
		return "", "", 0, fmt.Errorf("run monit %v: %w", args, err)
	}
	return o.String(), e.String(), 0, nil
}

func writeBlock(w *bytes.Buffer, name, text string) {
	if text == "" {
		return
	}
	fmt.Fprintf(w, "%s:\n", name)
	for _, l := range strings.SplitAfter(strings.TrimSuffix(text, "\n"), "\n") {
		w.WriteString("  " + strings.TrimSuffix(l, "\n") + "\n")
	}
}

// snapshot writes the programs that ran since the last one, the summary,
// the full status and the status XML.
func (r *run) snapshot(ctx context.Context, label string) error {
	fmt.Fprintf(&r.out, "\n## snapshot %s\n", label)
	progs, err := r.programs()
	if err != nil {
		return err
	}
	writeBlock(&r.out, "programs", progs)
	for _, verb := range []string{"summary", "status"} {
		out, errOut, code, err := r.cli(ctx, verb)
		if err != nil {
			return err
		}
		if code != 0 || errOut != "" {
			fmt.Fprintf(&r.out, "monit %s: exit %d\n", verb, code)
			writeBlock(&r.out, "stderr", errOut)
		}
		writeBlock(&r.out, verb, out)
	}
	xml, err := r.statusXML(ctx)
	if err != nil {
		return err
	}
	writeBlock(&r.out, "xml", xml)
	return nil
}

// programs returns the lines the programs logged since the last call,
// once every program started before it has logged (awaitPrograms).
func (r *run) programs() (string, error) {
	if err := r.awaitPrograms(); err != nil {
		return "", err
	}
	b, err := os.ReadFile(filepath.Join(r.root, "programs.log"))
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read the programs log: %w", err)
	}
	if int64(len(b)) < r.logPos {
		return "", errors.New("the programs log shrank")
	}
	// Only whole lines: a program may be writing at this moment.
	b = b[r.logPos:]
	b = b[:bytes.LastIndexByte(b, '\n')+1]
	r.logPos += int64(len(b))
	return string(b), nil
}

func (r *run) statusXML(ctx context.Context) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet,
		fmt.Sprintf("http://127.0.0.1:%d/_status2?format=xml", r.ports["httpd"]), nil)
	if err != nil {
		return "", fmt.Errorf("status xml: %w", err)
	}
	req.SetBasicAuth("vcap", "diff-password")
	c := &http.Client{Timeout: 30 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		return "", fmt.Errorf("status xml: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", fmt.Errorf("status xml: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Sprintf("HTTP %d\n%s", resp.StatusCode, body), nil
	}
	return indentXML(body)
}

// cleanup ends the daemon and every process carrying the root's mark, and
// removes the root.
func (r *run) cleanup() {
	r.stopDaemon()
	defer r.logged.Wait() // the daemon's output, once its last writer has gone
	if r.clock != nil {
		r.clock.close()
	}
	for _, s := range r.served {
		s.Close()
	}
	killMarked(rootEnv + "=" + r.root)
	if !r.o.Keep {
		os.RemoveAll(r.root)
	}
}

// killMarked kills every process whose environment holds mark.
func killMarked(mark string) {
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		if pid, err := strconv.Atoi(filepath.Base(p)); err == nil && pid != os.Getpid() && marked(pid, []byte(mark)) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}
