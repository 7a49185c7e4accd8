package monitdiff

import (
	"bufio"
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
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/container"
)

// Options say which daemon runs a scenario.
type Options struct {
	// Monit is the binary run as the daemon (`-I -c FILE`) and as the
	// command line: the real monit, or vigil under the name monit.
	Monit string
	// Env is added to the daemon's environment.
	Env []string
	// Keep leaves the root in place (for looking at a failure).
	Keep bool
}

// reaperEnv makes the harness's own binary the daemon's reaper (see
// ReaperMain).
const reaperEnv = "MONITDIFF_REAPER"

// ReaperMain must be called first in main (and TestMain) of a binary that
// runs scenarios. The harness starts each daemon under the same binary
// acting as a subreaper, so that the processes the daemon's programs leave
// behind are reaped as a stemcell's init reaps them, whatever this
// machine's PID 1 does (a dead process left a zombie looks alive to monit).
func ReaperMain() {
	if os.Getenv(reaperEnv) != "" && len(os.Args) > 1 {
		os.Exit(container.Reap(os.Args[1], os.Args[2:]))
	}
}

// rootEnv marks every process a scenario's daemon starts, so that the
// harness can find them all at the end (programs inherit the daemon's
// environment under monit and under vigil).
const rootEnv = "MONITDIFF_ROOT"

// run is one scenario being run.
type run struct {
	sc     *Scenario
	o      Options
	root   string
	ports  map[string]int
	clock  *clock
	daemon *exec.Cmd
	exited chan struct{} // closed when the daemon has been waited for
	served map[string]*http.Server
	out    bytes.Buffer // the transcript
	logPos int64        // how much of the programs log is in the transcript
	reaped reaps        // the orphans the daemon's reaper has reaped
	logged sync.WaitGroup
}

// reaps tells the harness when the daemon's reaper has reaped a process,
// from the line it logs for each: a killed process is a zombie until then,
// and monit takes a zombie for a live process.
type reaps struct {
	mu      sync.Mutex
	done    map[int]bool
	waiting map[int]chan struct{}
}

func (rp *reaps) saw(pid int) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	if rp.done == nil {
		rp.done, rp.waiting = map[int]bool{}, map[int]chan struct{}{}
	}
	rp.done[pid] = true
	if c := rp.waiting[pid]; c != nil {
		close(c)
		delete(rp.waiting, pid)
	}
}

// wait returns a channel closed once pid has been reaped.
func (rp *reaps) wait(pid int) <-chan struct{} {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	if rp.done == nil {
		rp.done, rp.waiting = map[int]bool{}, map[int]chan struct{}{}
	}
	c := make(chan struct{})
	if rp.done[pid] {
		close(c)
		return c
	}
	rp.waiting[pid] = c
	return c
}

var reapedLine = regexp.MustCompile(`^vigil container: reaped orphan (\d+)$`)

// Run runs sc under o.Monit and returns its transcript, normalised. The
// daemon and everything it started are ended before Run returns.
func Run(ctx context.Context, sc *Scenario, o Options) (string, error) {
	root, err := os.MkdirTemp("", "md") // short: vigil's control socket lives under it
	if err != nil {
		return "", fmt.Errorf("make root: %w", err)
	}
	r := &run{sc: sc, o: o, root: root, ports: map[string]int{}, served: map[string]*http.Server{}}
	defer r.cleanup()
	if err := r.setup(); err != nil {
		return "", err
	}
	fmt.Fprintf(&r.out, "# scenario %s\n", sc.Name)
	for _, st := range sc.Steps {
		if err := r.step(ctx, st); err != nil {
			return r.normal(), fmt.Errorf("%s line %d (%s; root %s): %w", sc.Name, st.Line, st.Verb, root, err)
		}
	}
	return r.normal(), nil
}

// placeholder finds {{root}}, {{prog}}, {{preamble}} and {{port:NAME}}.
var placeholder = regexp.MustCompile(`\{\{(root|prog|preamble|port:[a-z0-9_-]+)\}\}`)

const preamble = `set daemon 1
set logfile {{root}}/monit.log
set pidfile {{root}}/monit.pid
set statefile {{root}}/monit.state
set idfile {{root}}/monit.id
set httpd port {{port:httpd}} and use address 127.0.0.1
  allow cleartext {{root}}/monit/monit.user
check host clock with address 127.0.0.1
  if failed port {{port:clock}} protocol http request "/tick" with timeout 60 seconds then alert
`

// progScript is {{prog}}: the start, stop and exec program of every
// scenario. `prog VERB NAME` writes "NAME VERB" to the programs log, then:
// start runs a long sleep whose pid goes to run/NAME.pid, stop removes its
// pid file and
// kills it (in that order: the daemon may start it again as soon as it
// is dead, and its new pid file must stay), fail exits 1, spawn
// leaves a child and exits 1, touch, mkdir and mkfifo create files/NAME;
// anything else only logs.
const progScript = `#!/bin/sh
root="%s"
echo "$2 $1" >> "$root/programs.log"
case "$1" in
start) sleep 1000000 & echo $! > "$root/run/$2.pid" ;;
stop) if [ -f "$root/run/$2.pid" ]; then pid="$(cat "$root/run/$2.pid")"; rm -f "$root/run/$2.pid"; kill -9 "$pid"; fi ;;
fail) exit 1 ;;
spawn) sleep 1000000 & exit 1 ;;
touch) touch "$root/files/$2" ;;
mkdir) mkdir -p "$root/files/$2" ;;
mkfifo) mkfifo "$root/files/$2" ;;
esac
exit 0
`

func (r *run) setup() error {
	for _, d := range []string{"bosh/etc", "monit/job", "run", "files", "bin"} {
		if err := os.MkdirAll(filepath.Join(r.root, d), 0o755); err != nil {
			return fmt.Errorf("make root: %w", err)
		}
	}
	if err := os.WriteFile(filepath.Join(r.root, "monit", "monit.user"), []byte("vcap:diff-password\n"), 0o600); err != nil {
		return fmt.Errorf("write credentials: %w", err)
	}
	if err := os.WriteFile(filepath.Join(r.root, "bin", "prog"), fmt.Appendf(nil, progScript, r.root), 0o755); err != nil {
		return fmt.Errorf("write prog: %w", err)
	}
	var clockLn net.Listener
	for _, f := range r.sc.Files {
		for _, m := range placeholder.FindAllStringSubmatch(strings.ReplaceAll(f.Text, "{{preamble}}", preamble), -1) {
			name, ok := strings.CutPrefix(m[1], "port:")
			if !ok || r.ports[name] != 0 {
				continue
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				return fmt.Errorf("allocate a port: %w", err)
			}
			r.ports[name] = ln.Addr().(*net.TCPAddr).Port
			if name == "clock" {
				clockLn = ln
			} else {
				ln.Close() // the daemon binds httpd; the others start closed
			}
		}
	}
	if clockLn == nil {
		return errors.New("no {{preamble}} or {{port:clock}}: the harness needs the clock check")
	}
	r.clock = newClock(clockLn)
	for _, f := range r.sc.Files {
		p := filepath.Join(r.root, f.Path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("write %s: %w", f.Path, err)
		}
		if err := os.WriteFile(p, []byte(r.expand(f.Text)), f.Mode); err != nil {
			return fmt.Errorf("write %s: %w", f.Path, err)
		}
		if err := os.Chmod(p, f.Mode); err != nil {
			return fmt.Errorf("write %s: %w", f.Path, err)
		}
	}
	return r.startDaemon()
}

func (r *run) expand(s string) string {
	s = strings.ReplaceAll(s, "{{preamble}}", preamble)
	return placeholder.ReplaceAllStringFunc(s, func(m string) string {
		switch k := m[2 : len(m)-2]; {
		case k == "root":
			return r.root
		case k == "prog":
			return filepath.Join(r.root, "bin", "prog")
		default:
			return strconv.Itoa(r.ports[strings.TrimPrefix(k, "port:")])
		}
	})
}

func (r *run) monitrc() string { return filepath.Join(r.root, "bosh", "etc", "monitrc") }

// env is the environment of the daemon and the command line.
func (r *run) env() []string {
	env := append(os.Environ(), "HOME="+r.root, "VIGIL_ROOT="+r.root, "VIGIL_ISOLATION=off", rootEnv+"="+r.root)
	return append(env, r.o.Env...)
}

func (r *run) startDaemon() error {
	logf, err := os.OpenFile(filepath.Join(r.root, "daemon.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("daemon log: %w", err)
	}
	self, err := os.Executable()
	if err != nil {
		logf.Close()
		return fmt.Errorf("start the daemon: %w", err)
	}
	// The reaper's and the daemon's output goes to the log through a pipe
	// the harness reads, for the reaper's lines.
	pr, pw, err := os.Pipe()
	if err != nil {
		logf.Close()
		return fmt.Errorf("start the daemon: %w", err)
	}
	cmd := exec.Command(self, r.o.Monit, "-I", "-c", r.monitrc())
	cmd.Env, cmd.Dir = append(r.env(), reaperEnv+"=1"), r.root
	cmd.Stdout, cmd.Stderr = pw, pw
	err = cmd.Start()
	pw.Close()
	if err != nil {
		pr.Close()
		logf.Close()
		return fmt.Errorf("start the daemon: %w", err)
	}
	r.logged.Go(func() { // ends when the reaper and the daemon have
		defer logf.Close()
		defer pr.Close()
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			fmt.Fprintln(logf, sc.Text())
			if m := reapedLine.FindStringSubmatch(sc.Text()); m != nil {
				pid, _ := strconv.Atoi(m[1])
				r.reaped.saw(pid)
			}
		}
	})
	r.daemon, r.exited = cmd, make(chan struct{})
	exited := r.exited
	go func() { _ = cmd.Wait(); close(exited) }()
	return nil
}

// stopDaemon ends the daemon (SIGTERM; SIGKILL after 20 s) and waits.
func (r *run) stopDaemon() {
	if r.daemon == nil {
		return
	}
	r.clock.release()
	_ = r.daemon.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(20 * time.Second)
	defer t.Stop()
	select {
	case <-r.exited:
	case <-t.C:
		_ = r.daemon.Process.Kill()
		<-r.exited
	}
	r.daemon = nil
}

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

// programs returns the lines the programs logged since the last call.
func (r *run) programs() (string, error) {
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
	procs, _ := filepath.Glob("/proc/[0-9]*/environ")
	for _, p := range procs {
		env, err := os.ReadFile(p)
		if err != nil || !slices.ContainsFunc(bytes.Split(env, []byte{0}), func(e []byte) bool { return string(e) == mark }) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p))); err == nil && pid != os.Getpid() {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}
