package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// peerPackages maps each peer to its Debian package and the binaries the
// harness calls.
func peerPackages() map[string]struct {
	Pkg  string
	Bins []string
} {
	type pb = struct {
		Pkg  string
		Bins []string
	}
	return map[string]pb{
		"monit":       {"monit", []string{"monit"}},
		"supervisor":  {"supervisor", []string{"supervisord", "supervisorctl"}},
		"runit":       {"runit", []string{"runsvdir", "runsv", "sv"}},
		"s6":          {"s6", []string{"s6-svscan", "s6-supervise", "s6-svc", "s6-svstat"}},
		"daemontools": {"daemontools", []string{"svscan", "supervise", "svc", "svstat"}},
	}
}

// ensurePeers installs the peers from Debian unless every needed binary is
// already on PATH. --no-install-recommends keeps apt from pulling in
// runit-run alongside runit.
func ensurePeers(ctx context.Context, log io.Writer, peers []string) error {
	missing := false
	for _, p := range peers {
		for _, bin := range peerPackages()[p].Bins {
			if _, err := exec.LookPath(bin); err != nil {
				missing = true
			}
		}
	}
	if !missing {
		return nil
	}
	fmt.Fprintln(log, "bench: installing peers with apt-get")
	steps := [][]string{
		{"apt-get", "update"},
		{"apt-get", "install", "-y", "--no-install-recommends", "monit", "supervisor", "runit", "s6", "execline", "daemontools"},
	}
	for _, s := range steps {
		cmd := exec.CommandContext(ctx, s[0], s[1:]...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%s: %w", strings.Join(s, " "), err)
		}
	}
	return nil
}

// moduleRoot walks up from the working directory to go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("getwd: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found above the working directory")
		}
		dir = parent
	}
}

func goBuild(ctx context.Context, repo, out, pkg string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0") // static, as the README builds vigil
	var errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &errb, &errb
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s: %w: %s", pkg, err, tail(errb.String(), 300))
	}
	return nil
}

func buildChild(ctx context.Context, repo, tmp string) (string, error) {
	out := filepath.Join(tmp, "child")
	return out, goBuild(ctx, repo, out, "./bench/child")
}

// findVigil returns the vigil binary: the -vigil flag, else a build of
// ./cmd/vigil; an error means vigil is skipped.
func findVigil(ctx context.Context, repo, tmp, flagPath string) (string, error) {
	if flagPath != "" {
		abs, err := filepath.Abs(flagPath)
		if err != nil {
			return "", fmt.Errorf("vigil path: %w", err)
		}
		if _, err := os.Stat(abs); err != nil {
			return "", fmt.Errorf("vigil binary: %w", err)
		}
		return abs, nil
	}
	if _, err := os.Stat(filepath.Join(repo, "cmd", "vigil")); err != nil {
		return "", errors.New("./cmd/vigil does not exist yet")
	}
	out := filepath.Join(tmp, "vigil")
	return out, goBuild(ctx, repo, out, "./cmd/vigil")
}

// output runs a command and returns its trimmed stdout, or "" on failure.
func output(ctx context.Context, dir, name string, args ...string) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// machineFacts lists kernel, CPU, memory, Go and supervisor versions.
func machineFacts(ctx context.Context, repo, vigilBin string, peers []string) [][2]string {
	var f [][2]string
	var u unix.Utsname
	if err := unix.Uname(&u); err == nil {
		f = append(f, [2]string{"kernel", unix.ByteSliceToString(u.Sysname[:]) + " " +
			unix.ByteSliceToString(u.Release[:]) + " " + unix.ByteSliceToString(u.Machine[:])})
	}
	f = append(f, [2]string{"CPU", procField("/proc/cpuinfo", "model name")})
	f = append(f, [2]string{"cores", fmt.Sprint(runtime.NumCPU())})
	f = append(f, [2]string{"memory", procField("/proc/meminfo", "MemTotal")})
	f = append(f, [2]string{"Go", runtime.Version()})
	if os.Getenv("container") != "" {
		f = append(f, [2]string{"container", os.Getenv("container")})
	}
	for _, p := range peers {
		if p == vigilIsolated {
			continue // the same binary as vigil's
		}
		if p == "vigil" {
			v := output(ctx, repo, vigilBin, "--version")
			if v == "" {
				v = output(ctx, repo, "git", "describe", "--always", "--dirty", "--tags")
				if v != "" {
					v = "git " + v
				}
			}
			f = append(f, [2]string{"vigil", orUnknown(v)})
			continue
		}
		pkg := peerPackages()[p].Pkg
		f = append(f, [2]string{p, pkg + " " + orUnknown(output(ctx, "", "dpkg-query", "-W", "-f=${Version}", pkg))})
	}
	if slices.Contains(peers, "s6") {
		if v := output(ctx, "", "dpkg-query", "-W", "-f=${Version}", "execline"); v != "" {
			f = append(f, [2]string{"execline", "execline " + v})
		}
	}
	return f
}

// scratchBase is where the run's scratch directory goes: $TMPDIR when
// set, else /dev/shm when it is a tmpfs that allows executables, else the
// system's temp directory.
// Every supervisor's files (configs, state, pid files, logs) live there,
// so on a tmpfs none of them waits on the disk: on this machine's ext4 the
// creation of a file took from 35 to 430 µs depending on the state of the
// journal, which drowned the supervisors' own costs at N=1000. A BOSH
// stemcell's sys/run, where vigil keeps its pid files and records, is a
// tmpfs too.
func scratchBase() string {
	if os.Getenv("TMPDIR") != "" {
		return ""
	}
	var st unix.Statfs_t
	if unix.Statfs("/dev/shm", &st) == nil && st.Type == unix.TMPFS_MAGIC && st.Flags&unix.ST_NOEXEC == 0 {
		return "/dev/shm" // the children's binary runs from there
	}
	return ""
}

// fsName names the type of the file system that holds path ("ext4",
// "tmpfs", or its magic number).
func fsName(path string) string {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return "unknown"
	}
	switch st.Type {
	case unix.TMPFS_MAGIC:
		return "tmpfs"
	case unix.EXT4_SUPER_MAGIC:
		return "ext4"
	case unix.XFS_SUPER_MAGIC:
		return "xfs"
	case unix.BTRFS_SUPER_MAGIC:
		return "btrfs"
	case unix.OVERLAYFS_SUPER_MAGIC:
		return "overlayfs"
	}
	return fmt.Sprintf("0x%x", st.Type)
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// procField returns the value of the first "key: value" line of a /proc
// file, or "unknown".
func procField(path, key string) string {
	fh, err := os.Open(path)
	if err != nil {
		return "unknown"
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}
