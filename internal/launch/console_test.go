package launch

import (
	"bufio"
	"os"
	"regexp"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/internal/testproc"
)

// TestConsoleAndTimestamps: with a console, each line of the process's
// output also reaches the console's stdout or stderr, prefixed with
// JOB/PROC, from a pooled init as from a fresh one; with timestamps, each
// line in the log files begins with the time it was written.
func TestConsoleAndTimestamps(t *testing.T) {
	f := newFixture(t)
	outR, outW, _ := os.Pipe()
	errR, errW, _ := os.Pipe()
	t.Cleanup(func() { outR.Close(); outW.Close(); errR.Close(); errW.Close() })
	self, _ := os.Executable()
	pool := NewPool(PoolConfig{Init: self, Env: []string{"GORACE=" + testproc.NoRaceExitDelay}, Size: 1, Console: []*os.File{outW, errW}})
	t.Cleanup(pool.Close)
	out, errs := bufio.NewReader(outR), bufio.NewReader(errR)
	expect := func(r *bufio.Reader, want string) {
		t.Helper()
		line, err := r.ReadString('\n')
		if err != nil || line != want {
			t.Fatalf("console line %q (%v), want %q", line, err, want)
		}
	}
	for i, name := range []string{"fresh", "pooled"} {
		p := f.process(name, "serve")
		p.Logs.Timestamps = true
		_, pr := f.start(p, func(o *Options) {
			o.Console = []*os.File{outW, errW}
			if i == 1 {
				o.Pool = pool
			}
		})
		exe := f.rep.Expect(t, "ready")
		next(t, pr)
		expect(out, "job/"+name+" | started\n")
		unix.Kill(exe.PID, unix.SIGUSR2)
		expect(out, "job/"+name+" | stdout after USR2\n")
		expect(errs, "job/"+name+" | stderr after USR2\n")
		unix.Kill(exe.PID, unix.SIGTERM)
		next(t, pr)
		log, _ := os.ReadFile(f.layout.StdoutLog("job", name))
		stamped := regexp.MustCompile(`^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z) started\n(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z) stdout after USR2\n$`)
		m := stamped.FindStringSubmatch(string(log))
		if m == nil {
			t.Fatalf("%s: stdout log %q", name, log)
		}
		for _, ts := range m[1:] {
			if at, err := time.Parse(time.RFC3339Nano, ts); err != nil || time.Since(at) > time.Hour || time.Since(at) < 0 {
				t.Fatalf("%s: a stamp %q that is not now (%v)", name, ts, err)
			}
		}
	}
}
