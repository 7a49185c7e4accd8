package kuberig

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// packages are the Debian packages the rig needs, by a program each
// installs.
var packages = []struct{ program, pkg string }{
	{"containerd", "containerd"},
	{"runc", "runc"},
	{"ctr", "containerd"},
	{"/usr/lib/cni/bridge", "containernetworking-plugins"},
	{"/bin/busybox", "busybox-static"},
	{"unshare", "util-linux"},
	{"ip", "iproute2"},
}

// Install installs with apt-get the packages whose programs are missing.
func Install(ctx context.Context, log io.Writer) error {
	var need []string
	for _, p := range packages {
		if _, err := exec.LookPath(p.program); err != nil && !slices.Contains(need, p.pkg) {
			need = append(need, p.pkg)
		}
	}
	if len(need) == 0 {
		return nil
	}
	fmt.Fprintf(log, "kuberig: installing %s\n", strings.Join(need, " "))
	for _, args := range [][]string{{"update", "-qq"}, append([]string{"install", "-y", "-qq"}, need...)} {
		cmd := exec.CommandContext(ctx, "apt-get", args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("kuberig: apt-get %s: %w", args[0], err)
		}
	}
	return nil
}

// cgroupMounts lists the mount points of the cgroup hierarchies, v1 and
// v2.
func cgroupMounts() ([]string, error) {
	f, err := os.Open("/proc/self/mounts")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) > 3 && (fields[2] == "cgroup" || fields[2] == "cgroup2") {
			out = append(out, fields[1])
		}
	}
	return out, sc.Err()
}

// makeCgroupRoot creates the kubelet's cgroup root in every hierarchy
// (it must exist before the kubelet starts) and returns what removes it,
// the pods' groups below it included. It refuses one that exists: another
// rig would own it.
func makeCgroupRoot(name string) (func() error, error) {
	mounts, err := cgroupMounts()
	if err != nil {
		return nil, err
	}
	var made []string
	remove := func() error {
		var errs []error
		for _, dir := range made {
			errs = append(errs, removeCgroupTree(dir))
		}
		return errors.Join(errs...)
	}
	for _, m := range mounts {
		dir := filepath.Join(m, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			return nil, errors.Join(fmt.Errorf("kuberig: cgroup root %s: %w (another kubelet rig?)", dir, err), remove())
		}
		made = append(made, dir)
	}
	return remove, nil
}

// removeCgroupTree removes an empty cgroup tree, the deepest groups first.
func removeCgroupTree(dir string) error {
	var dirs []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return err
	})
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	var errs []error
	for _, d := range slices.Backward(dirs) {
		if err := os.Remove(d); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("kuberig: remove cgroup: %w", err))
		}
	}
	return errors.Join(errs...)
}

// network is the pods' bridge and subnet.
type network struct {
	bridge  string
	subnet  string // CIDR
	gateway string // the bridge's address, CIDR
	first   string // the first address handed to a pod
}

// rigNetwork is the rig's: a private range no route of this machine
// covers (makeBridge checks).
func rigNetwork() network {
	return network{bridge: "vigkube0", subnet: "10.233.91.0/24", gateway: "10.233.91.1/24", first: "10.233.91.10"}
}

// makeBridge creates the pods' bridge with the gateway's address and
// returns what removes it. It refuses when the bridge exists (another rig)
// or an address of this machine lies in the subnet.
func makeBridge(ctx context.Context, n network) (func() error, error) {
	_, subnet, err := net.ParseCIDR(n.subnet)
	if err != nil {
		return nil, err
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && (subnet.Contains(ipn.IP) || ipn.Contains(subnet.IP)) {
			return nil, fmt.Errorf("kuberig: the pods' subnet %s overlaps %s on this machine (another kubelet rig?)", n.subnet, ipn)
		}
	}
	if _, err := net.InterfaceByName(n.bridge); err == nil {
		return nil, fmt.Errorf("kuberig: the bridge %s exists (another kubelet rig?)", n.bridge)
	}
	ip := func(args ...string) error {
		if out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("kuberig: ip %s: %w: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	remove := func() error { return ip("link", "del", n.bridge) }
	for _, args := range [][]string{
		{"link", "add", n.bridge, "type", "bridge"},
		{"addr", "add", n.gateway, "dev", n.bridge},
		{"link", "set", n.bridge, "up"},
	} {
		if err := ip(args...); err != nil {
			if args[1] != "add" || args[0] != "link" {
				err = errors.Join(err, remove())
			}
			return nil, err
		}
	}
	return remove, nil
}

// freePort is a TCP port free on loopback now.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// absentBefore records whether a path the kubelet or containerd create
// at a fixed place existed before the rig, and returns what removes it
// afterwards when it did not.
func absentBefore(path string) func() error {
	if _, err := os.Lstat(path); err == nil {
		return func() error { return nil }
	}
	return func() error { return os.RemoveAll(path) }
}
