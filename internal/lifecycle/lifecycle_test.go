package lifecycle

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/boshpath"
)

func newRoot(t *testing.T) boshpath.Layout {
	l, err := boshpath.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func writeScript(t *testing.T, l boshpath.Layout, job, name, body string) {
	t.Helper()
	p := filepath.Join(l.JobBinDir(job), name)
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestHooksRunInParallel(t *testing.T) {
	l := newRoot(t)
	dir := t.TempDir()
	for _, f := range []string{"x", "y"} {
		if err := unix.Mkfifo(filepath.Join(dir, f), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// Each script needs the other running: run one after the other, they
	// would both hang until the timeout.
	writeScript(t, l, "a", "pre-start", "echo from-a > "+dir+"/x; read v < "+dir+"/y; echo a got $v; echo PATH=$PATH")
	writeScript(t, l, "b", "pre-start", "read v < "+dir+"/x; echo from-b > "+dir+"/y; echo b failing >&2; exit 3")
	os.MkdirAll(l.JobDir("c"), 0o755) // no script: skipped
	rep, err := RunHook(context.Background(), HookOptions{Layout: l, Hook: "pre-start", Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	want := "1 of 2 pre-start scripts failed. Failed Jobs: b. Successful Jobs: a.\nb: exit status 3"
	if got := rep.Err(); got == nil || got.Error() != want {
		t.Fatalf("got %v\nwant %s", got, want)
	}
	out, _ := os.ReadFile(filepath.Join(l.LogDir("a"), "pre-start.stdout.log"))
	if string(out) != "a got from-b\nPATH=/usr/sbin:/usr/bin:/sbin:/bin\n" {
		t.Fatalf("a's log %q", out)
	}
	errLog, _ := os.ReadFile(filepath.Join(l.LogDir("b"), "pre-start.stderr.log"))
	if string(errLog) != "b failing\n" {
		t.Fatalf("b's stderr log %q", errLog)
	}
}

func TestHungHookIsEndedAndNamed(t *testing.T) {
	l := newRoot(t)
	pidPath := filepath.Join(t.TempDir(), "pid")
	writeScript(t, l, "stuck", "post-start", "echo $$ > "+pidPath+"; exec sleep 1000")
	writeScript(t, l, "fine", "post-start", "exit 0")
	rep, _ := RunHook(context.Background(), HookOptions{Layout: l, Hook: "post-start", Timeout: 300 * time.Millisecond})
	err := rep.Err()
	if err == nil || !strings.Contains(err.Error(), "Failed Jobs: stuck. Successful Jobs: fine.") ||
		!strings.Contains(err.Error(), "stuck: timed out: post-start of job stuck ran longer than 300ms") {
		t.Fatalf("got %v", err)
	}
	if !errors.Is(rep.Results[1].Err, ErrTimedOut) {
		t.Fatalf("result %+v", rep.Results)
	}
	b, _ := os.ReadFile(pidPath)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if pid == 0 || unix.Kill(pid, 0) == nil {
		t.Fatalf("hung script %d still runs", pid)
	}
}

func TestPreStopEnvironmentAndUnknownHook(t *testing.T) {
	l := newRoot(t)
	writeScript(t, l, "j", "pre-stop", "echo $BOSH_VM_NEXT_STATE $BOSH_INSTANCE_NEXT_STATE")
	rep, err := RunHook(context.Background(), HookOptions{Layout: l, Hook: "pre-stop",
		Env: []string{"BOSH_VM_NEXT_STATE=delete", "BOSH_INSTANCE_NEXT_STATE=keep"}})
	if err != nil || rep.Err() != nil {
		t.Fatal(err, rep.Err())
	}
	out, _ := os.ReadFile(filepath.Join(l.LogDir("j"), "pre-stop.stdout.log"))
	if string(out) != "delete keep\n" {
		t.Fatalf("%q", out)
	}
	if _, err := RunHook(context.Background(), HookOptions{Layout: l, Hook: "pre-fetch"}); err == nil {
		t.Fatal("unknown hook accepted")
	}
}

// clock records the waits the drain asks for and lets them pass at once.
type clock struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (c *clock) wait(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	c.waits = append(c.waits, d)
	c.mu.Unlock()
	ch := make(chan time.Time, 1)
	ch <- time.Time{}
	return ch
}

func TestDrainProtocol(t *testing.T) {
	l := newRoot(t)
	calls := t.TempDir()
	writeScript(t, l, "zero", "drain", "echo \"$@|$BOSH_JOB_STATE|$BOSH_JOB_NEXT_STATE\" >> "+calls+"/zero; echo 0")
	writeScript(t, l, "dynamic", "drain", `echo "$@|$BOSH_JOB_NEXT_STATE" >> `+calls+`/dynamic
if [ "$1" = job_check_status ]; then echo 3; else echo -2; fi`)
	writeScript(t, l, "garbage", "drain", "echo 'draining now'")
	writeScript(t, l, "nonzero", "drain", "echo 5; exit 1") // the exit code does not count
	next := 20
	c := &clock{}
	rep, err := Drain(context.Background(), DrainOptions{Layout: l, Kind: Update, HashChanged: true,
		Packages: []string{"zpkg", "apkg"}, PersistentDisk: 10, NextPersistentDisk: &next, Wait: c.wait})
	if err != nil {
		t.Fatal(err)
	}
	e := rep.Err()
	if e == nil || !strings.HasPrefix(e.Error(), "1 of 4 drain scripts failed. Failed Jobs: garbage. Successful Jobs: dynamic, nonzero, zero.") ||
		!strings.Contains(e.Error(), `garbage: Script did not return a signed integer: printed "draining now"`) {
		t.Fatalf("report %v", e)
	}
	z, _ := os.ReadFile(calls + "/zero")
	if string(z) != `job_changed hash_changed apkg zpkg|{"persistent_disk":10}|{"persistent_disk":20}`+"\n" {
		t.Fatalf("zero called with %q", z)
	}
	d, _ := os.ReadFile(calls + "/dynamic")
	if string(d) != "job_changed hash_changed apkg zpkg|{\"persistent_disk\":20}\njob_check_status hash_unchanged|\n" {
		t.Fatalf("dynamic called with %q", d)
	}
	slices.Sort(c.waits)
	if want := []time.Duration{0, 2 * time.Second, 3 * time.Second, 5 * time.Second}; !slices.Equal(c.waits, want) {
		t.Fatalf("waits %v, want %v", c.waits, want)
	}
}

// TestDrainNextState: an update always carries BOSH_JOB_NEXT_STATE, as the
// agent's does (an update has a new spec by definition): without a next
// disk it is the current one. A shutdown without a next spec leaves it out,
// and the status calls never have it.
func TestDrainNextState(t *testing.T) {
	l := newRoot(t)
	calls := t.TempDir()
	writeScript(t, l, "j", "drain", `echo "$1|${BOSH_JOB_NEXT_STATE-unset}" >> `+calls+`/j
if [ "$1" = job_check_status ]; then echo 0; else echo -1; fi`)
	next := 0
	for _, tt := range []struct {
		o    DrainOptions
		want string
	}{
		{DrainOptions{Kind: Update, PersistentDisk: 10},
			"job_changed|{\"persistent_disk\":10}\njob_check_status|unset\n"},
		{DrainOptions{Kind: Update, PersistentDisk: 10, NextPersistentDisk: &next},
			"job_changed|{\"persistent_disk\":0}\njob_check_status|unset\n"},
		{DrainOptions{Kind: Shutdown, PersistentDisk: 10}, "job_shutdown|unset\njob_check_status|unset\n"},
		{DrainOptions{Kind: Shutdown, PersistentDisk: 10, NextPersistentDisk: &next},
			"job_shutdown|{\"persistent_disk\":0}\njob_check_status|unset\n"},
	} {
		os.Remove(calls + "/j")
		tt.o.Layout, tt.o.Wait = l, (&clock{}).wait
		rep, err := Drain(context.Background(), tt.o)
		if err != nil || rep.Err() != nil {
			t.Fatal(err, rep.Err())
		}
		if got, _ := os.ReadFile(calls + "/j"); string(got) != tt.want {
			t.Errorf("kind %d next %v: calls %q, want %q", tt.o.Kind, tt.o.NextPersistentDisk, got, tt.want)
		}
	}
}

func TestDrainShutdownAndBudget(t *testing.T) {
	l := newRoot(t)
	calls := t.TempDir()
	writeScript(t, l, "down", "drain", "echo \"$@\" > "+calls+"/down; echo 0")
	writeScript(t, l, "hang", "drain", "exec sleep 1000")
	rep, _ := Drain(context.Background(), DrainOptions{Layout: l, Kind: Shutdown, Budget: 300 * time.Millisecond, Wait: (&clock{}).wait})
	e := rep.Err()
	if e == nil || !strings.Contains(e.Error(), "Failed Jobs: hang. Successful Jobs: down.") ||
		!strings.Contains(e.Error(), "the drain budget of 300ms ran out") {
		t.Fatalf("report %v", e)
	}
	if b, _ := os.ReadFile(calls + "/down"); string(b) != "job_shutdown hash_unchanged\n" {
		t.Fatalf("shutdown args %q", b)
	}
}

func TestParseDrainOutput(t *testing.T) {
	for in, want := range map[string]int{"0": 0, " 12\n": 12, "-5": -5, "+3": 3} {
		if got, err := ParseDrainOutput(in); err != nil || got != want {
			t.Errorf("%q: %d %v", in, got, err)
		}
	}
	for _, in := range []string{"", "1.5", "ten", "1 2", "0x10"} {
		if _, err := ParseDrainOutput(in); !errors.Is(err, ErrNotInteger) {
			t.Errorf("%q accepted: %v", in, err)
		}
	}
}

// FuzzParseDrainOutput: an accepted answer is exactly the integer the text
// holds; everything else is ErrNotInteger.
func FuzzParseDrainOutput(f *testing.F) {
	for _, s := range []string{"0", "-30\n", "  7 ", "abc", "", "99999999999999999999", "-0", "+4"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseDrainOutput(s)
		want, werr := strconv.Atoi(strings.TrimSpace(s))
		switch {
		case werr != nil && !errors.Is(err, ErrNotInteger):
			t.Fatalf("%q: %v, want ErrNotInteger", s, err)
		case werr == nil && (err != nil || n != want):
			t.Fatalf("%q: %d %v, want %d", s, n, err, want)
		}
	})
}
