package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/connlimit"
	"github.com/vigil-bosh/vigil/internal/testproc"
)

// floodLimit is the daemon's descriptor limit in TestFloodLeavesTheDaemonBounded:
// well above what it needs, well below the flood.
const floodLimit = 384

// TestFloodLeavesTheDaemonBounded floods both HTTP listeners of a daemon
// (the monit API and the status page) over loopback with far more
// connections than the daemon has descriptors: first clients that send a
// request without credentials and hold on, then clients that send nothing. The daemon
// keeps its descriptors bounded (at most connlimit.PerPeer per
// listener for the flood's one peer, root), its control socket answers during the flood, and a process
// killed during the flood is restarted. The flood is a fixed number of
// connections, closed when the test ends.
func TestFloodLeavesTheDaemonBounded(t *testing.T) {
	var rl syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl) != nil || rl.Cur < 6*floodLimit {
		t.Skipf("the test needs %d descriptors of its own", 6*floodLimit)
	}
	c := newCLI(t)
	monitPort := c.monitRoot()
	cmd := exec.Command("/bin/sh", "-c", fmt.Sprintf("ulimit -n %d && exec \"$0\" \"$@\"", floodLimit),
		vigilBin, "daemon", "--root", c.root, "--backend", "native", "--http", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "VIGIL_ISOLATION=off")
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil {
			t.Errorf("daemon exited with %v", err)
		}
	}()
	sc := bufio.NewScanner(stderr)
	pageAddr := ""
	for sc.Scan() {
		if m := pageURL.FindStringSubmatch(sc.Text()); m != nil {
			pageAddr = strings.TrimSuffix(strings.TrimPrefix(m[1], "http://"), "/")
		}
		if strings.Contains(sc.Text(), "msg=supervising") {
			break
		}
	}
	go func() {
		for sc.Scan() {
			select {
			case c.log <- sc.Text():
			default:
			}
		}
	}()
	if pageAddr == "" {
		t.Fatal("no status page address logged")
	}
	c.expectLog("process=web/a state=running") // monit's engine starts it once the daemon supervises
	daemon := cmd.Process.Pid
	before := openFDs(t, daemon)

	// First the clients that send a request without credentials and hold
	// on (the daemon used to keep each for its idle time), then those that
	// send nothing (each holds a slot until the header timeout).
	addrs := []string{fmt.Sprintf("127.0.0.1:%d", monitPort), pageAddr}
	flood := floodConns(t, addrs, 2*floodLimit, true)
	defer func() {
		for _, fc := range flood {
			fc.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	client := control.NewClient(c.root + "/sys/run/vigil/vigil.sock")
	if _, err := client.Status(ctx); err != nil {
		t.Fatalf("the control socket did not answer during the flood: %v", err)
	}
	flood = append(flood, floodConns(t, addrs, floodLimit, false)...)
	st, err := client.Status(ctx)
	if err != nil {
		t.Fatalf("the control socket did not answer during the flood: %v", err)
	}
	if n := openFDs(t, daemon); n > before+3*connlimit.PerPeer {
		t.Errorf("the daemon holds %d descriptors during the flood (%d before it)", n, before)
	}
	var victim control.ProcessStatus
	for _, p := range st.Processes {
		if p.Process == "a" {
			victim = p
		}
	}
	if victim.ExecPID == 0 {
		t.Fatalf("no running web/a: %+v", st.Processes)
	}
	if err := syscall.Kill(victim.ExecPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	c.expectLog("process=web/a state=running")
	st, err = client.Status(ctx)
	if err != nil {
		t.Fatalf("the control socket did not answer during the flood: %v", err)
	}
	for _, p := range st.Processes {
		if p.Process == "a" && (p.State != "running" || p.Restarts != victim.Restarts+1 || p.ExecPID == victim.ExecPID) {
			t.Errorf("web/a after its kill during the flood: %+v", p)
		}
	}
	t.Logf("daemon descriptors: %d before the flood, %d during it (%d flood connections)", before, openFDs(t, daemon), len(flood))
}

// floodConns opens n connections to each of addrs, 32 at a time, and
// returns them open; with request, each sends a request without
// credentials (and never reads the reply), else nothing.
func floodConns(t *testing.T, addrs []string, n int, request bool) []net.Conn {
	t.Helper()
	var mu sync.Mutex
	var conns []net.Conn
	var errs []error
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for _, addr := range addrs {
		for range n {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				fc, err := net.DialTimeout("tcp", addr, testproc.Guard)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, err)
					return
				}
				conns = append(conns, fc)
				if request {
					io.WriteString(fc, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
				}
			})
		}
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Errorf("%d flood connections failed: %v", len(errs), errs[0])
	}
	return conns
}

func openFDs(t *testing.T, pid int) int {
	t.Helper()
	entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}
