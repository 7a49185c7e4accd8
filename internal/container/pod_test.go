package container

import (
	"bufio"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/vigil-bosh/vigil/internal/testproc"
)

// podSpec is what the kubelet reads of examples/kubernetes/pod.yaml.
type podSpec struct {
	Spec struct {
		Grace      int `yaml:"terminationGracePeriodSeconds"`
		Containers []struct {
			Name      string
			Command   []string
			Lifecycle struct {
				PreStop struct {
					Exec struct{ Command []string }
				} `yaml:"preStop"`
			}
			ReadinessProbe  probeSpec `yaml:"readinessProbe"`
			LivenessProbe   probeSpec `yaml:"livenessProbe"`
			SecurityContext struct {
				RunAsUser    *int `yaml:"runAsUser"`
				Capabilities struct{ Add []string }
			} `yaml:"securityContext"`
		}
	}
}

type probeSpec struct {
	HTTPGet *struct {
		Host string
		Port int
		Path string
	} `yaml:"httpGet"`
	Exec *struct{ Command []string }
}

// podContainer is one container of the example as the test runs it.
type podContainer struct {
	name     string
	root     string
	cmd      *exec.Cmd
	logs     chan string // its stderr (vigil's log)
	stdout   *lineBuffer // its stdout (the --console copy)
	preStop  []string
	ready    probeSpec
	live     probeSpec
	httpPort string // the port its --probes listens on, "" without
}

// TestExamplePod runs examples/kubernetes/pod.yaml as the kubelet would:
// each container's command as PID 1 of its own PID, mount, UTS and IPC
// namespaces, the probes it declares (HTTP on the pod's address, not
// loopback, or exec), then the termination: both preStop hooks at once,
// then SIGTERM, with the grace period enforced by a SIGKILL. Every drain
// must run exactly once, before its process is signalled; readiness must
// end once the drains begin; both containers must exit 0 by themselves
// within the grace period, the one whose process ignores SIGTERM and
// SIGQUIT too; each process's output reaches its container's stdout.
func TestExamplePod(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root for the containers' namespaces (unshare)")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("needs unshare from util-linux")
	}
	raw, err := os.ReadFile(filepath.Join("..", "..", "examples", "kubernetes", "pod.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var pod podSpec
	if err := yaml.Unmarshal(raw, &pod); err != nil {
		t.Fatal(err)
	}
	if len(pod.Spec.Containers) != 2 {
		t.Fatalf("the example has %d containers", len(pod.Spec.Containers))
	}
	const grace = 12 // the example's 120 s, scaled down: --grace and the kubelet's deadline alike
	bin := buildVigil(t)
	stamps := t.TempDir()
	var pcs []*podContainer
	for i, spec := range pod.Spec.Containers {
		if g := flagValue(spec.Command, "--grace"); g != strconv.Itoa(pod.Spec.Grace)+"s" {
			t.Fatalf("%s: --grace %s, but terminationGracePeriodSeconds %d", spec.Name, g, pod.Spec.Grace)
		}
		sc := spec.SecurityContext
		if sc.RunAsUser == nil || *sc.RunAsUser != 0 || !slices.Contains(sc.Capabilities.Add, "SYS_ADMIN") {
			t.Fatalf("%s: the securityContext lacks what the sandbox needs: %+v", spec.Name, sc)
		}
		for _, p := range []probeSpec{spec.ReadinessProbe, spec.LivenessProbe} {
			if p.HTTPGet != nil && (p.HTTPGet.Host == "127.0.0.1" || p.HTTPGet.Host == "localhost") {
				t.Fatalf("%s: an httpGet probe on %s, the node's loopback when the kubelet probes", spec.Name, p.HTTPGet.Host)
			}
		}
		pc := &podContainer{name: spec.Name, root: t.TempDir(), ready: spec.ReadinessProbe, live: spec.LivenessProbe}
		podJob(t, pc.root, spec.Name, i == 1) // the second one's process ignores TERM and QUIT
		port := ""
		if addr := flagValue(spec.Command, "--probes"); addr != "" {
			port = freePort(t)
			pc.httpPort = port
		}
		rewrite := func(argv []string) []string {
			out := slices.Clone(argv)
			for j, a := range out {
				switch {
				case a == "/usr/local/bin/vigil":
					out[j] = bin
				case a == "/var/vcap":
					out[j] = pc.root
				case a == "/var/vigil/stamps":
					out[j] = stamps
				case a == strconv.Itoa(pod.Spec.Grace)+"s":
					out[j] = strconv.Itoa(grace) + "s"
				case strings.HasPrefix(a, ":") && port != "":
					out[j] = ":" + port
				}
			}
			return out
		}
		pc.preStop = rewrite(spec.Lifecycle.PreStop.Exec.Command)
		for _, p := range []*probeSpec{&pc.ready, &pc.live} {
			if p.Exec != nil {
				p.Exec.Command = rewrite(p.Exec.Command)
			}
		}
		argv := append([]string{"--pid", "--mount", "--uts", "--ipc", "--fork", "--mount-proc"}, rewrite(spec.Command)...)
		pc.cmd = exec.Command("unshare", argv...)
		pc.stdout = &lineBuffer{}
		pc.cmd.Stdout = pc.stdout
		stderr, _ := pc.cmd.StderrPipe()
		if err := pc.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		killNamespace(t, pc.cmd)
		pc.logs = make(chan string, 256)
		go func() {
			sc := bufio.NewScanner(stderr)
			for sc.Scan() {
				pc.logs <- sc.Text()
			}
			close(pc.logs)
		}()
		pcs = append(pcs, pc)
	}
	podIP := podAddress(t)
	for _, pc := range pcs {
		pc.expectLog(t, "msg=supervising")
		testproc.WaitUntil(t, filepath.Join(pc.root, "sys", "log", "job"), testproc.FileHolds(pc.logPath(), "started\n"))
		for _, p := range []probeSpec{pc.ready, pc.live} {
			if err := pc.probe(podIP, p); err != nil {
				t.Fatalf("%s: probe before the termination: %v", pc.name, err)
			}
		}
		pc.stdout.await(t, "job/job | started")
	}

	// The termination: the preStop hooks, at once, then SIGTERM to each
	// container; the kubelet's SIGKILL at the end of the grace period.
	began := time.Now()
	deadline := time.AfterFunc(grace*time.Second, func() {
		for _, pc := range pcs {
			pc.cmd.Process.Kill()
		}
	})
	defer deadline.Stop()
	var hooks sync.WaitGroup
	for _, pc := range pcs {
		hooks.Go(func() {
			out, err := exec.Command(pc.preStop[0], pc.preStop[1:]...).CombinedOutput()
			if err != nil {
				t.Errorf("%s: preStop: %v\n%s", pc.name, err, out)
			}
		})
	}
	hooks.Wait()
	for _, pc := range pcs {
		if err := pc.probe(podIP, pc.ready); err == nil {
			t.Errorf("%s: ready after its drains", pc.name)
		}
		if err := pc.probe(podIP, pc.live); err != nil {
			t.Errorf("%s: not live after its drains: %v", pc.name, err)
		}
		syscall.Kill(childOf(t, pc.cmd.Process.Pid), syscall.SIGTERM)
	}
	for _, pc := range pcs {
		err := pc.cmd.Wait()
		if time.Since(began) >= grace*time.Second {
			t.Fatalf("%s: still running at the end of the grace period (%v)", pc.name, err)
		}
		if err != nil {
			t.Fatalf("%s: exited with %v", pc.name, err)
		}
		drains, _ := os.ReadFile(filepath.Join(pc.root, "drains"))
		if string(drains) != "drain job_shutdown hash_unchanged, process running and not signalled\n" {
			t.Errorf("%s: the drains that ran: %q", pc.name, drains)
		}
	}
	logged, _ := os.ReadFile(pcs[1].logPath())
	if string(logged) != "started\ngot TERM\ngot QUIT\n" {
		t.Errorf("the stubborn process's log: %q", logged)
	}
}

// podJob writes the container's one job: a process that prints "started"
// and, when it gets TERM (and QUIT), says so (and, stubborn, goes on), and
// a drain that records how it found the process.
func podJob(t *testing.T, root, name string, stubborn bool) {
	write := func(rel, body string) {
		p := filepath.Join(root, "jobs", "job", rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The user is one every machine has (a start as a missing vcap fails).
	write("config/bpm.yml", "processes:\n- name: job\n  executable: "+filepath.Join(root, "jobs", "job", "bin", "job")+"\n  user: nobody\n")
	onTerm := "echo got TERM; exit 0"
	if stubborn {
		onTerm = "echo got TERM"
	}
	write("bin/job", "#!/bin/sh\ntrap '"+onTerm+"' TERM\ntrap 'echo got QUIT' QUIT\necho started\nwhile :; do sleep 1000 & wait $!; done\n")
	log := filepath.Join(root, "sys", "log", "job", "job.stdout.log")
	pid := filepath.Join(root, "sys", "run", "bpm", "job", "job.pid")
	write("bin/drain", "#!/bin/sh\nstate=stopped\nkill -0 $(cat "+pid+") && ! grep -q got "+log+" && state='running and not signalled'\n"+
		"echo \"drain $1 $2, process $state\" >> "+filepath.Join(root, "drains")+"\necho 0\n")
}

func (pc *podContainer) logPath() string {
	return filepath.Join(pc.root, "sys", "log", "job", "job.stdout.log")
}

func (pc *podContainer) expectLog(t *testing.T, s string) {
	t.Helper()
	guard := time.After(time.Minute)
	for {
		select {
		case line, ok := <-pc.logs:
			if !ok {
				t.Fatalf("%s: stderr closed before %q", pc.name, s)
			}
			if strings.Contains(line, s) {
				return
			}
		case <-guard:
			t.Fatalf("%s: no %q on stderr", pc.name, s)
		}
	}
}

// probe runs p as the kubelet does: an HTTP GET on the pod's address, or
// the command.
func (pc *podContainer) probe(podIP string, p probeSpec) error {
	if p.HTTPGet != nil {
		resp, err := http.Get("http://" + net.JoinHostPort(podIP, pc.httpPort) + p.HTTPGet.Path)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return &probeError{resp.Status}
		}
		return nil
	}
	out, err := exec.Command(p.Exec.Command[0], p.Exec.Command[1:]...).CombinedOutput()
	if err != nil {
		return &probeError{string(out)}
	}
	return nil
}

type probeError struct{ what string }

func (e *probeError) Error() string { return "probe failed: " + e.what }

// podAddress is an address of this machine that is not loopback, where a
// kubelet would probe the pod; loopback when there is none.
func podAddress(t *testing.T) string {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			return n.IP.String()
		}
	}
	t.Log("no address but loopback: the HTTP probes go to 127.0.0.1")
	return "127.0.0.1"
}

// flagValue is the word after flag in argv, "" without it.
func flagValue(argv []string, flag string) string {
	if i := slices.Index(argv, flag); i >= 0 && i+1 < len(argv) {
		return argv[i+1]
	}
	return ""
}

// lineBuffer collects a command's output and wakes waiters at each write.
type lineBuffer struct {
	mu   sync.Mutex
	buf  strings.Builder
	wake chan struct{}
}

func (b *lineBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	if b.wake != nil {
		close(b.wake)
		b.wake = nil
	}
	return len(p), nil
}

// await blocks until the output holds line.
func (b *lineBuffer) await(t *testing.T, line string) {
	t.Helper()
	guard := time.After(time.Minute)
	for {
		b.mu.Lock()
		if strings.Contains(b.buf.String(), line+"\n") {
			b.mu.Unlock()
			return
		}
		if b.wake == nil {
			b.wake = make(chan struct{})
		}
		wake := b.wake
		b.mu.Unlock()
		select {
		case <-wake:
		case <-guard:
			t.Fatalf("no %q in the output: %q", line, b.buf.String())
		}
	}
}
