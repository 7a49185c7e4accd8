// Package connlimittest holds slow connections to a listener from a
// process of another user, for the tests of per-peer bounds: the test
// binary, copied where that user can run it, started with its
// credentials, dials and holds.
package connlimittest

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// envFlood, in the test binary's environment, makes it a flooder:
// NETWORK,ADDRESS,N.
const envFlood = "CONNLIMITTEST_FLOOD"

// Main runs the flooder when the test binary was started as one (it then
// exits), and returns at once otherwise. Call it first in TestMain.
func Main() {
	if spec := os.Getenv(envFlood); spec != "" {
		os.Exit(flood(spec))
	}
}

// flood dials N slow connections, each sending the start of a request
// and nothing more, says "dialed N" on stdout and holds them until its
// stdin ends.
func flood(spec string) int {
	f := strings.SplitN(spec, ",", 3)
	if len(f) != 3 {
		fmt.Println("error: bad spec", spec)
		return 2
	}
	n, _ := strconv.Atoi(f[2])
	conns := make([]net.Conn, 0, n)
	for range n {
		c, err := net.Dial(f[0], f[1])
		if err != nil {
			fmt.Println("error:", err)
			return 1
		}
		conns = append(conns, c)
		_, _ = io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n") // the headers never end; the server may have closed it
	}
	fmt.Println("dialed", len(conns))
	_, _ = io.Copy(io.Discard, os.Stdin)
	for _, c := range conns {
		c.Close()
	}
	return 0
}

// Flood has a process running as uid (and gid uid) open n slow
// connections to addr on network ("tcp", "unix") and returns once it has
// dialed them all; the server may have closed any of them since. The
// process ends, closing them, when the test does.
func Flood(t testing.TB, network, addr string, n, uid int) {
	t.Helper()
	bin := runnableCopy(t)
	cmd := exec.Command(bin, "-test.run=^$")
	cmd.Env = []string{envFlood + "=" + network + "," + addr + "," + strconv.Itoa(n)}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if want := fmt.Sprintf("dialed %d\n", n); line != want {
		t.Fatalf("the flooder said %q (%v), want %q", line, err, want)
	}
}

// runnableCopy copies the test binary into a directory every user can
// enter: the binary's own may be closed to other users.
func runnableCopy(t testing.TB) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "flooder")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for d := filepath.Dir(dir); d != "/"; d = filepath.Dir(d) {
		if st, err := os.Stat(d); err != nil || st.Mode().Perm()&0o001 == 0 {
			t.Skipf("%s cannot be entered by other users", d)
		}
	}
	path := filepath.Join(dir, "flooder")
	if err := os.WriteFile(path, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}
