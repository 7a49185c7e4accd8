package kuberig

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Options configure Start.
type Options struct {
	Dir   string // the rig's directory: everything it makes goes below it
	Tools Tools
	Log   io.Writer // progress
}

// Rig is a running containerd and standalone kubelet.
type Rig struct {
	dir        string
	tools      Tools
	log        io.Writer
	net        network
	kubeletURL string // https://127.0.0.1:PORT
	client     *http.Client
	containerd *exec.Cmd
	kubelet    *exec.Cmd
	events     *eventLog
	// undo holds the cleanups of what Start did, in the order done.
	undo []func() error
}

// The node's name, which static pods' names end with.
const nodeName = "kuberig"

// cgroupRoot is the kubelet's cgroup root, below which go its pods.
const cgroupRoot = "vigil-kuberig"

// Start starts containerd and the kubelet in o.Dir and returns once the
// kubelet answers its health check. On failure it undoes what it did.
func Start(ctx context.Context, o Options) (_ *Rig, err error) {
	r := &Rig{dir: o.Dir, tools: o.Tools, log: o.Log, net: rigNetwork()}
	defer func() {
		if err != nil {
			err = errors.Join(err, r.Close())
		}
	}()
	for _, d := range []string{"run", "log", "manifests", "kubelet", "cni/net.d", "cni/ipam", "containerd", "images", "sysctl"} {
		if err := os.MkdirAll(filepath.Join(r.dir, d), 0o755); err != nil {
			return nil, err
		}
	}
	// What containerd and the kubelet make at fixed places, removed
	// afterwards when it was not there before.
	r.undo = append(r.undo, absentBefore("/run/containerd"), absentBefore("/var/lib/kubelet"), absentBefore("/var/lib/cni"))
	removeCgroups, err := makeCgroupRoot(cgroupRoot)
	if err != nil {
		return nil, err
	}
	r.undo = append(r.undo, removeCgroups)
	removeBridge, err := makeBridge(ctx, r.net)
	if err != nil {
		return nil, err
	}
	r.undo = append(r.undo, removeBridge)
	if err := r.startContainerd(ctx); err != nil {
		return nil, err
	}
	if err := r.startKubelet(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

// write writes a file below the rig's directory.
func (r *Rig) write(rel, text string) error {
	return os.WriteFile(filepath.Join(r.dir, rel), []byte(text), 0o644)
}

// startContainerd starts containerd with the rig's configuration, imports
// the pause image and follows its events.
func (r *Rig) startContainerd(ctx context.Context) error {
	if err := r.write("cni/net.d/10-vigil-kuberig.conflist", cniConfig(r.dir, r.net)); err != nil {
		return err
	}
	if err := r.write("containerd/config.toml", containerdConfig(r.dir, pauseRef)); err != nil {
		return err
	}
	cmd := exec.Command("containerd", "--config", filepath.Join(r.dir, "containerd", "config.toml"))
	if err := r.background(cmd, "containerd.log"); err != nil {
		return err
	}
	r.containerd = cmd
	if err := waitFor(ctx, "containerd's socket", func() bool {
		return exec.Command("ctr", "--address", r.socket(), "version").Run() == nil
	}); err != nil {
		return err
	}
	ev, err := followEvents(r.socket(), r.tools.Crictl, r.crictlConfig())
	if err != nil {
		return err
	}
	r.events = ev
	if err := r.write("crictl.yaml", "runtime-endpoint: unix://"+r.socket()+"\nimage-endpoint: unix://"+r.socket()+"\ntimeout: 10\n"); err != nil {
		return err
	}
	archive, err := pauseImage(filepath.Join(r.dir, "images"))
	if err != nil {
		return err
	}
	return r.Import(ctx, archive)
}

// startKubelet starts the kubelet in a mount namespace of its own, where
// the three kernel settings it would otherwise rewrite on the host
// (vm.overcommit_memory=1, kernel.panic=10, kernel.panic_on_oops=1) are
// files of the rig bind-mounted over /proc/sys: the machine's own stay as
// they are.
func (r *Rig) startKubelet(ctx context.Context) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	healthz, err := freePort()
	if err != nil {
		return err
	}
	if err := r.write("kubelet/config.yaml", kubeletConfig(r.dir, port, healthz, "/"+cgroupRoot)); err != nil {
		return err
	}
	var script strings.Builder
	for _, s := range [][2]string{{"vm/overcommit_memory", "1"}, {"kernel/panic", "10"}, {"kernel/panic_on_oops", "1"}} {
		f := "sysctl/" + strings.ReplaceAll(s[0], "/", ".")
		if err := r.write(f, s[1]+"\n"); err != nil {
			return err
		}
		fmt.Fprintf(&script, "mount --bind %s /proc/sys/%s && ", filepath.Join(r.dir, f), s[0])
	}
	script.WriteString(`exec "$@"`)
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c", script.String(), "kubelet",
		r.tools.Kubelet, "--config="+filepath.Join(r.dir, "kubelet", "config.yaml"), "--root-dir="+filepath.Join(r.dir, "kubelet"),
		"--cert-dir="+filepath.Join(r.dir, "kubelet", "pki"), "--hostname-override="+nodeName, "--v=3")
	if err := r.background(cmd, "kubelet.log"); err != nil {
		return err
	}
	r.kubelet = cmd
	r.kubeletURL = "https://127.0.0.1:" + strconv.Itoa(port)
	// The kubelet's certificate is its own, self-signed, on loopback.
	r.client = &http.Client{Timeout: 5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	return waitFor(ctx, "the kubelet's health check", func() bool {
		resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(healthz) + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// background starts cmd in a session of its own with its output appended
// to the rig's log file name.
func (r *Rig) background(cmd *exec.Cmd, name string) error {
	f, err := os.OpenFile(filepath.Join(r.dir, "log", name), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("kuberig: %s: %w", cmd.Path, err)
	}
	return nil
}

func (r *Rig) socket() string       { return filepath.Join(r.dir, "run", "containerd.sock") }
func (r *Rig) crictlConfig() string { return filepath.Join(r.dir, "crictl.yaml") }

// Log returns the path of the rig's log file name (kubelet.log,
// containerd.log).
func (r *Rig) Log(name string) string { return filepath.Join(r.dir, "log", name) }

// waitFor polls cond every 100 ms until it holds or ctx ends: the
// programs the rig waits for announce nothing.
func waitFor(ctx context.Context, what string, cond func() bool) error {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("kuberig: waiting for %s: %w", what, ctx.Err())
		case <-t.C:
		}
	}
	return nil
}

// Close removes every pod (their containers stopped by the kubelet, what
// remains by crictl), stops the kubelet and containerd, kills the shims
// they left, unmounts what is mounted below the rig's directory and
// undoes what Start did (the bridge, the cgroup root, the paths made at
// fixed places). It returns what could not be undone.
func (r *Rig) Close() error {
	var errs []error
	if r.kubelet != nil {
		errs = append(errs, r.removeAllPods())
		errs = append(errs, stop(r.kubelet, 30*time.Second))
	}
	if r.containerd != nil {
		for _, args := range [][]string{{"ps", "-aq"}, {"pods", "-q"}} {
			ids, _ := r.crictl(context.Background(), args...)
			for _, id := range strings.Fields(ids) {
				if args[0] == "ps" {
					r.crictl(context.Background(), "rm", "-f", id)
				} else {
					r.crictl(context.Background(), "rmp", "-f", id)
				}
			}
		}
		if r.events != nil {
			r.events.close()
		}
		errs = append(errs, stop(r.containerd, 30*time.Second))
	}
	errs = append(errs, killShims(r.socket()), unmountBelow(r.dir))
	for _, u := range slices.Backward(r.undo) {
		errs = append(errs, u())
	}
	return errors.Join(errs...)
}

// stop ends a process the rig started: SIGTERM, SIGKILL after grace.
func stop(cmd *exec.Cmd, grace time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
		return nil
	case <-time.After(grace):
		_ = cmd.Process.Kill()
		<-done
		return fmt.Errorf("kuberig: %s did not end within %s of SIGTERM", cmd.Path, grace)
	}
}

// killShims kills the containerd shims serving the rig's containerd (and
// what still runs below them), found by the address on their command line.
func killShims(socket string) error {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return err
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if strings.Contains(args[0], "containerd-shim") && slices.Contains(args, socket) {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
	}
	return nil
}

// unmountBelow unmounts every mount below dir, deepest first (the
// containers' root file systems, the sandboxes' shm).
func unmountBelow(dir string) error {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	var points []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && strings.HasPrefix(f[4], dir+"/") {
			points = append(points, f[4])
		}
	}
	slices.SortFunc(points, func(a, b string) int { return len(b) - len(a) })
	var errs []error
	for _, p := range points {
		if err := unix.Unmount(p, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
			errs = append(errs, fmt.Errorf("kuberig: unmount %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}
