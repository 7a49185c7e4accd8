package monitdiff

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vigil-bosh/vigil/internal/container"
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
// scenario. `prog VERB NAME` writes "NAME VERB" to the programs log and
// opens the logged file (kept open by it and what it forks: see
// awaitPrograms), then:
// start runs a long sleep whose pid goes to run/NAME.pid, stop removes its
// pid file and
// kills it (in that order: the daemon may start it again as soon as it
// is dead, and its new pid file must stay), fail exits 1, spawn
// leaves a child and exits 1, touch, mkdir and mkfifo create files/NAME;
// anything else only logs.
const progScript = `#!/bin/sh
root="%s"
echo "$2 $1" >> "$root/programs.log"
exec 9< "$root/%s"
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
	if err := os.WriteFile(filepath.Join(r.root, loggedName), nil, 0o644); err != nil {
		return fmt.Errorf("write the logged file: %w", err)
	}
	if err := os.WriteFile(filepath.Join(r.root, "bin", "prog"), fmt.Appendf(nil, progScript, r.root, loggedName), 0o755); err != nil {
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
