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

	"github.com/vigil-bosh/vigil/internal/initimage"
	"github.com/vigil-bosh/vigil/internal/launch/procinit"
)

// These benchmarks drive the per-process init over its launch protocol, as
// the daemon does, for each program it can be: vigil-init, the embedded
// image vigil executes, and the vigil binary itself, the fallback (the
// other packages' tests use their test binary as the init, which links
// other packages).

// initPrograms names the programs an init can be, for sub-benchmarks.
func initPrograms(b *testing.B) []struct{ name, path string } {
	progs := []struct{ name, path string }{{"vigil", vigilBin}}
	im, err := initimage.Open()
	if err != nil {
		b.Logf("no vigil-init: %v", err)
		return progs
	}
	b.Cleanup(func() { im.Close() })
	return append([]struct{ name, path string }{{initimage.Name, im.Path()}}, progs...)
}

// benchInit is one init started by hand, with its launch sent.
type benchInit struct {
	cmd     *exec.Cmd
	ctrl    *os.File
	reports *bufio.Scanner
}

// startInit starts prog as an init in dir running argv, and waits until
// it reports running.
func startInit(b *testing.B, prog, dir string, argv ...string) *benchInit {
	b.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		b.Fatal(err)
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "control"), os.NewFile(uintptr(fds[1]), "control")
	cmd := exec.Command(prog, "init", "bench/p")
	cmd.Args[0] = initimage.Name
	// The daemon's environment for inits (see proc.startInit).
	cmd.Env = []string{"GOMAXPROCS=1", "GODEBUG=asyncpreemptoff=1", "GOGC=50"}
	cmd.ExtraFiles = []*os.File{theirs}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	theirs.Close()
	// What the daemon sends (a pid file, a warning), each init its own files.
	own, err := os.MkdirTemp(dir, "p")
	if err != nil {
		b.Fatal(err)
	}
	launch, _ := json.Marshal(procinit.Launch{Label: "bench/p", Path: argv[0], Args: argv, Dir: "/",
		Env: []string{"PATH=/usr/bin:/bin"}, Stdout: filepath.Join(own, "out.log"), Stderr: filepath.Join(own, "err.log"),
		PidFile: filepath.Join(own, "p.pid"), ExitFile: filepath.Join(own, "exit.json"),
		Warnings: []string{"isolation is switched off"}})
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
	for _, p := range initPrograms(b) {
		b.Run(p.name, func(b *testing.B) { benchInitStart(b, p.path) })
	}
}

func benchInitStart(b *testing.B, prog string) {
	dir := b.TempDir()
	var cpu time.Duration
	for b.Loop() {
		it := startInit(b, prog, dir, "/bin/true")
		if ev := it.next(b); ev != procinit.EventExit {
			b.Fatalf("init reported %q, want exit", ev)
		}
		it.end(b)
		cpu += it.cmd.ProcessState.UserTime() + it.cmd.ProcessState.SystemTime()
	}
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-us/op")
}

// floorProgram is the least a Go process costs: one that waits on a
// signal (it says so on stdout first). Beside it, an init's figures say
// what the init adds.
const floorProgram = `package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM)
	os.Stdout.WriteString("waiting\n")
	<-c
}
`

// BenchmarkInitIdleMemory starts 20 inits of a sleeping executable, and 20
// of the floor program, and reports what each keeps once running: private
// memory (the pages only it has: what an init really costs) and PSS (with
// its share of the binary), in KiB, and its threads; floor-private-KiB is
// the floor program's private memory. The figures do not depend on the
// machine's load; b.N only repeats the reading.
func BenchmarkInitIdleMemory(b *testing.B) {
	floor := buildFloor(b, b.TempDir())
	for _, p := range initPrograms(b) {
		b.Run(p.name, func(b *testing.B) { benchInitIdleMemory(b, p.path, floor) })
	}
}

func benchInitIdleMemory(b *testing.B, prog, floor string) {
	const n = 20
	dir := b.TempDir()
	var procs []*exec.Cmd
	defer func() {
		for _, p := range procs {
			_ = p.Process.Signal(syscall.SIGTERM) // an init forwards it: sleep ends, then the init
			_ = p.Wait()
		}
	}()
	for range n {
		it := startInit(b, prog, dir, "/bin/sleep", "1000")
		defer it.ctrl.Close()
		procs = append(procs, it.cmd)
	}
	for range n {
		f := exec.Command(floor)
		f.Env = []string{"GOMAXPROCS=1"} // as an init gets it
		out, err := f.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}
		if err := f.Start(); err != nil {
			b.Fatal(err)
		}
		procs = append(procs, f)
		if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "waiting\n" {
			b.Fatalf("the floor program said %q, %v", line, err)
		}
	}
	var inits, floors memFigures
	for b.Loop() {
		inits, floors = measure(b, procs[:n]), measure(b, procs[n:])
	}
	b.ReportMetric(inits.private/n, "private-KiB/init")
	b.ReportMetric(inits.pss/n, "PSS-KiB/init")
	b.ReportMetric(inits.threads/n, "threads/init")
	b.ReportMetric(floors.private/n, "floor-private-KiB")
}

// buildFloor builds floorProgram in dir and returns the binary.
func buildFloor(b *testing.B, dir string) string {
	b.Helper()
	src := filepath.Join(dir, "floor")
	if err := os.MkdirAll(src, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "main.go"), []byte(floorProgram), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte("module floor\n\ngo 1.26\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	bin := filepath.Join(dir, "floor.bin")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = src
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("build the floor program: %v\n%s", err, out)
	}
	return bin
}

// memFigures are sums over processes: KiB, KiB, threads.
type memFigures struct{ private, pss, threads float64 }

func measure(b *testing.B, procs []*exec.Cmd) memFigures {
	var m memFigures
	for _, p := range procs {
		r, err := rollup(p.Process.Pid)
		if err != nil {
			b.Fatal(err)
		}
		m.private += float64(r["Private_Dirty:"] + r["Private_Clean:"])
		m.pss += float64(r["Pss:"])
		tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", p.Process.Pid))
		m.threads += float64(len(tasks))
	}
	return m
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
