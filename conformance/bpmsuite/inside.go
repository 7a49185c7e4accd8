//go:build conformance

package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// insideArg makes the program the PID 1 of one run (see inside).
const insideArg = "__inside"

// namespaces are those of a run: its own mounts and PIDs, so that nothing
// it starts outlives it and no mount it makes reaches the machine.
func namespaces() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWNS | unix.CLONE_NEWPID, Pdeathsig: syscall.SIGKILL}
}

// inside is one run: it builds the view of the machine the suite expects
// (overlay), runs the suite's test binary in it, reaping every orphan as
// the PID 1 of the run's PID namespace, and returns the binary's exit
// code. Whatever still runs when it returns dies with the namespace.
func inside(args []string) int {
	fs := flag.NewFlagSet(insideArg, flag.ExitOnError)
	release := fs.String("release", "", "")
	work := fs.String("work", "", "")
	target := fs.String("target", "", "")
	out := fs.String("out", "", "")
	focus := fs.String("focus", "", "")
	fs.Parse(args)
	if err := overlay(*work, *release); err != nil {
		fmt.Fprintln(os.Stderr, "bpmsuite:", err)
		return 1
	}
	if err := fixtures(); err != nil {
		fmt.Fprintln(os.Stderr, "bpmsuite:", err)
		return 1
	}
	cmd := exec.Command(filepath.Join(*work, "integration.test"), "-test.v", "-test.timeout", "60m",
		"-ginkgo.no-color", "-ginkgo.json-report", filepath.Join(*out, "report.json"))
	if *focus != "" {
		cmd.Args = append(cmd.Args, "-ginkgo.focus", *focus)
	}
	cmd.Dir = filepath.Join(*release, "src", "bpm", "integration") // its fixtures are relative
	cmd.Env = append(os.Environ(), "PATH="+filepath.Join(*work, "gobin")+":"+os.Getenv("PATH"),
		"BPMSUITE_BPM="+filepath.Join(*work, *target), "GOPATH="+filepath.Join(*work, "gopath")) // gexec wants one
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "bpmsuite:", err)
		return 1
	}
	return reapUntil(cmd.Process.Pid)
}

// reapUntil reaps every child (orphans are ours as PID 1) until pid has
// exited, and returns its exit code.
func reapUntil(pid int) int {
	for {
		var ws unix.WaitStatus
		got, err := unix.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "bpmsuite: wait:", err)
			return 1
		}
		if got == pid {
			if ws.Signaled() {
				return 128 + int(ws.Signal())
			}
			return ws.ExitStatus()
		}
	}
}

// overlay makes the run's root an overlay of the machine's root with a
// tmpfs above it, so that every file the run writes (the fixtures, the
// suite's and the jobs' files) is thrown away with the run, and pivots
// into it; the machine's devices and sysfs (with its cgroups), the work
// directory (the binaries; the run's report and log are written there)
// and the release are bound in, and /proc is the PID namespace's.
func overlay(work, release string) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	layer := filepath.Join(work, "layer")
	if err := os.MkdirAll(layer, 0o755); err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", layer, "tmpfs", 0, "mode=755"); err != nil {
		return fmt.Errorf("tmpfs: %w", err)
	}
	root := filepath.Join(layer, "root")
	for _, d := range []string{"upper", "work", "root"} {
		if err := os.Mkdir(filepath.Join(layer, d), 0o755); err != nil {
			return err
		}
	}
	opts := "lowerdir=/,upperdir=" + filepath.Join(layer, "upper") + ",workdir=" + filepath.Join(layer, "work")
	if err := unix.Mount("overlay", root, "overlay", 0, opts); err != nil {
		return fmt.Errorf("overlay of /: %w", err)
	}
	for _, b := range []struct {
		path  string
		flags uintptr
	}{{"/dev", unix.MS_REC}, {"/sys", unix.MS_REC}, {work, 0}, {release, 0}} {
		if err := unix.Mount(b.path, filepath.Join(root, b.path), "", unix.MS_BIND|b.flags, ""); err != nil {
			return fmt.Errorf("bind %s: %w", b.path, err)
		}
	}
	if err := unix.Mount("proc", filepath.Join(root, "proc"), "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("proc: %w", err)
	}
	return pivot(root)
}

// pivot makes root the root of the mount namespace and detaches the old
// one.
func pivot(root string) error {
	old := filepath.Join(root, ".oldroot")
	if err := os.Mkdir(old, 0o700); err != nil {
		return err
	}
	if err := unix.PivotRoot(root, old); err != nil {
		return fmt.Errorf("pivot_root: %w", err)
	}
	if err := os.Chdir("/"); err != nil {
		return err
	}
	if err := unix.Unmount("/.oldroot", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detach the old root: %w", err)
	}
	return os.Remove("/.oldroot")
}

// fixtures gives the run's root what bpm-release's test image has (its
// ci/Dockerfile): vcap (uid 2000, gid 3000) owning /var/vcap, and runc and
// tini at bpm's package paths.
func fixtures() error {
	for _, c := range [][]string{
		{"groupadd", "-g", "3000", "vcap"},
		{"useradd", "-u", "2000", "-g", "3000", "vcap"},
		{"mkdir", "-p", "/var/vcap/packages/bpm/bin", "/var/vcap/data/packages", "/var/vcap/data/bpm", "/var/vcap/jobs", "/var/vcap/store"},
	} {
		if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
			return fmt.Errorf("%v: %w: %s", c, err, out)
		}
	}
	for _, name := range []string{"runc", "tini"} {
		path, err := exec.LookPath(name)
		if err != nil {
			return fmt.Errorf("%s is not installed (apt-get install %s): %w", name, name, err)
		}
		if err := os.Symlink(path, "/var/vcap/packages/bpm/bin/"+name); err != nil {
			return err
		}
	}
	out, err := exec.Command("chown", "-R", "vcap:vcap", "/var/vcap").CombinedOutput()
	if err != nil {
		return fmt.Errorf("chown /var/vcap: %w: %s", err, out)
	}
	return nil
}
