package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/procinit"
)

// These benchmarks drive the vigil binary itself as the per-process init,
// over its launch protocol, as the daemon does (the other packages' tests
// use their test binary as the init, which links other packages).

// benchInit is one init started by hand, with its launch sent.
type benchInit struct {
	cmd     *exec.Cmd
	ctrl    *os.File
	reports *bufio.Scanner
}

// startInit starts vigil as an init in dir running argv, and waits until
// it reports running.
func startInit(b *testing.B, dir string, argv ...string) *benchInit {
	b.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		b.Fatal(err)
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "control"), os.NewFile(uintptr(fds[1]), "control")
	cmd := exec.Command(vigilBin, "init", "bench/p")
	// The daemon's environment for inits (see proc.startInit).
	cmd.Env = []string{"GOMAXPROCS=1", "GODEBUG=asyncpreemptoff=1", "GOGC=50"}
	cmd.ExtraFiles = []*os.File{theirs}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	theirs.Close()
	launch, _ := json.Marshal(procinit.Launch{Label: "bench/p", Path: argv[0], Args: argv, Dir: "/",
		Env: []string{"PATH=/usr/bin:/bin"}, Stdout: filepath.Join(dir, "out.log"), Stderr: filepath.Join(dir, "err.log")})
	if _, err := ours.Write(append(launch, '\n')); err != nil {
		b.Fatal(err)
	}
	it := &benchInit{cmd: cmd, ctrl: ours, reports: bufio.NewScanner(ours)}
	if ev := it.next(b); ev != procinit.EventRunning {
		b.Fatalf("init reported %q, want running", ev)
	}
	return it
}

// next returns the next report's event ("" once the socket closes).
func (it *benchInit) next(b *testing.B) string {
	b.Helper()
	for it.reports.Scan() {
		var r procinit.Report
		if json.Unmarshal(it.reports.Bytes(), &r) == nil {
			return r.Event
		}
	}
	return ""
}

// end waits for the init to exit (after its executable did, or killed).
func (it *benchInit) end(b *testing.B) {
	b.Helper()
	_ = it.cmd.Wait()
	it.ctrl.Close()
}

// BenchmarkInitStart is the life of an init whose executable exits at once
// (/bin/true): runtime start, launch, fork and exec, reap, exit. cpu-us/op
// is the CPU of the init and of what it waited for (rusage), which the wall
// time of a busy machine does not tell.
func BenchmarkInitStart(b *testing.B) {
	dir := b.TempDir()
	var cpu time.Duration
	for b.Loop() {
		it := startInit(b, dir, "/bin/true")
		if ev := it.next(b); ev != procinit.EventExit {
			b.Fatalf("init reported %q, want exit", ev)
		}
		it.end(b)
		cpu += it.cmd.ProcessState.UserTime() + it.cmd.ProcessState.SystemTime()
	}
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-us/op")
}

// BenchmarkInitIdleMemory starts 20 inits of a sleeping executable and
// reports what each keeps once running: private memory (the pages only it
// has: what an init really costs) and PSS (with its share of the binary),
// in KiB, and its threads. The figures do not depend on the machine's
// load; b.N only repeats the reading.
func BenchmarkInitIdleMemory(b *testing.B) {
	const n = 20
	dir := b.TempDir()
	inits := make([]*benchInit, n)
	for i := range inits {
		inits[i] = startInit(b, dir, "/bin/sleep", "1000")
	}
	defer func() {
		for _, it := range inits {
			_ = it.cmd.Process.Signal(syscall.SIGTERM) // forwarded: sleep ends, then the init
			it.end(b)
		}
	}()
	var private, pss, threads int
	for b.Loop() {
		private, pss, threads = 0, 0, 0
		for _, it := range inits {
			r, err := rollup(it.cmd.Process.Pid)
			if err != nil {
				b.Fatal(err)
			}
			private += r["Private_Dirty:"] + r["Private_Clean:"]
			pss += r["Pss:"]
			tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", it.cmd.Process.Pid))
			threads += len(tasks)
		}
	}
	b.ReportMetric(float64(private)/n, "private-KiB/init")
	b.ReportMetric(float64(pss)/n, "PSS-KiB/init")
	b.ReportMetric(float64(threads)/n, "threads/init")
}

// rollup reads /proc/PID/smaps_rollup's figures, in KiB, by field name.
func rollup(pid int) (map[string]int, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, line := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(line); len(f) >= 2 {
			n, _ := strconv.Atoi(f[1])
			out[f[0]] = n
		}
	}
	return out, nil
}
