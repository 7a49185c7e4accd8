package supervise

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

// fakeProc is a Process the test controls. It runs as soon as it starts
// (unless failStart) and exits only when the test, or a kill, says so.
type fakeProc struct {
	pid    int
	events chan ProcessEvent
	mu     sync.Mutex
	sigs   []syscall.Signal
	exited bool
	// exitOn lists the signals that end the process; Kill always does.
	exitOn []syscall.Signal
}

func (p *fakeProc) PID() int                    { return p.pid }
func (p *fakeProc) Events() <-chan ProcessEvent { return p.events }

func (p *fakeProc) Signal(sig syscall.Signal) error {
	p.mu.Lock()
	p.sigs = append(p.sigs, sig)
	p.mu.Unlock()
	if slices.Contains(p.exitOn, sig) {
		p.exit(Exit{Signal: sig})
	}
	return nil
}

func (p *fakeProc) Kill() error {
	p.mu.Lock()
	p.sigs = append(p.sigs, syscall.SIGKILL)
	p.mu.Unlock()
	p.exit(Exit{Signal: syscall.SIGKILL})
	return nil
}

func (p *fakeProc) ForceKill() error { return p.Kill() }

func (p *fakeProc) exit(e Exit) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exited {
		return
	}
	p.exited = true
	p.events <- ProcessEvent{Exit: e}
	close(p.events)
}

func (p *fakeProc) signals() []syscall.Signal {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.sigs)
}

// fakeRunner starts fakeProcs and remembers them, with their start times.
type fakeRunner struct {
	mu     sync.Mutex
	procs  []*fakeProc
	starts []time.Time
	exitOn []syscall.Signal
	fail   error // when set, Start fails
	silent bool  // when set, processes never report running
}

func (r *fakeRunner) Start(context.Context) (Process, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.starts = append(r.starts, time.Now())
	if r.fail != nil {
		return nil, r.fail
	}
	p := &fakeProc{pid: 1000 + len(r.procs), events: make(chan ProcessEvent, 2), exitOn: r.exitOn}
	if !r.silent {
		p.events <- ProcessEvent{Running: true, ExecPID: p.pid + 1}
	}
	r.procs = append(r.procs, p)
	return p, nil
}

func (r *fakeRunner) last() *fakeProc {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.procs[len(r.procs)-1]
}

func (r *fakeRunner) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.starts)
}

func startSup(t *testing.T, r *fakeRunner, tm Timing) *Supervisor {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := New(Config{ID: ID{"job", "proc"}, Timing: tm, Runner: r})
	go s.Run(ctx)
	t.Cleanup(func() { cancel(); <-s.Done() })
	return s
}

func TestRestartAfterExitIsImmediate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &fakeRunner{exitOn: []syscall.Signal{syscall.SIGTERM}}
		s := startSup(t, r, Timing{})
		st, err := s.Do(t.Context(), VerbStart)
		if err != nil || st.State != Running || st.PID != 1000 {
			t.Fatalf("start: %+v %v", st, err)
		}
		before := time.Now()
		r.last().exit(Exit{Signal: syscall.SIGKILL})
		synctest.Wait()
		st = s.Status()
		if st.State != Running || st.Gen != 2 || st.Restarts != 1 || st.LastExit.Signal != syscall.SIGKILL {
			t.Fatalf("after the kill: %+v", st)
		}
		if d := r.starts[1].Sub(before); d != 0 {
			t.Fatalf("first restart waited %v", d)
		}
		st, err = s.Do(t.Context(), VerbStop)
		if err != nil || st.State != Stopped || !slices.Equal(r.last().signals(), []syscall.Signal{syscall.SIGTERM}) {
			t.Fatalf("stop: %+v %v %v", st, err, r.last().signals())
		}
	})
}

func TestStopLadderTimesSignals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &fakeRunner{} // ignores TERM and QUIT
		s := startSup(t, r, Timing{})
		if _, err := s.Do(t.Context(), VerbStart); err != nil {
			t.Fatal(err)
		}
		begin := time.Now()
		st, err := s.Do(t.Context(), VerbStop)
		if err != nil || st.State != Stopped {
			t.Fatalf("stop: %+v %v", st, err)
		}
		if took := time.Since(begin); took != 17*time.Second {
			t.Fatalf("ladder took %v, want 15s + 2s", took)
		}
		want := []syscall.Signal{syscall.SIGTERM, syscall.SIGQUIT, syscall.SIGKILL}
		if got := r.last().signals(); !slices.Equal(got, want) {
			t.Fatalf("signals %v, want %v", got, want)
		}
	})
}

func TestCrashLoopBacksOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &fakeRunner{}
		s := startSup(t, r, Timing{})
		if _, err := s.Do(t.Context(), VerbStart); err != nil {
			t.Fatal(err)
		}
		for range 5 {
			r.last().exit(Exit{Code: 1})
			synctest.Wait()
			for s.Status().State == Backoff {
				time.Sleep(time.Millisecond) // synctest: virtual time, advances to the restart
				synctest.Wait()
			}
		}
		var gaps []time.Duration
		for i := 1; i < len(r.starts); i++ {
			gaps = append(gaps, r.starts[i].Sub(r.starts[i-1]).Round(time.Millisecond))
		}
		want := []time.Duration{0, 100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond}
		if !slices.Equal(gaps, want) {
			t.Fatalf("gaps %v, want %v", gaps, want)
		}
	})
}

// TestBackoffSaysWhenItRetries: a status in backoff carries the time the
// next start is due, which is when it happens; other states carry none.
func TestBackoffSaysWhenItRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &fakeRunner{}
		s := startSup(t, r, Timing{})
		if st, _ := s.Do(t.Context(), VerbStart); !st.RetryAt.IsZero() {
			t.Fatalf("running with a retry time: %+v", st)
		}
		r.last().exit(Exit{Code: 1}) // immediate restart
		synctest.Wait()
		exited := time.Now()
		r.last().exit(Exit{Code: 1}) // backoff: 100 ms
		synctest.Wait()
		st := s.Status()
		if st.State != Backoff || !st.RetryAt.Equal(exited.Add(100*time.Millisecond)) {
			t.Fatalf("backoff %v, retry at %v (exit at %v)", st.State, st.RetryAt, exited)
		}
		time.Sleep(st.RetryAt.Sub(time.Now())) // synctest: virtual time, to the retry
		synctest.Wait()
		if st := s.Status(); st.State != Running || !st.RetryAt.IsZero() || !r.starts[2].Equal(exited.Add(100*time.Millisecond)) {
			t.Fatalf("after the retry: %+v, started at %v", st, r.starts[2])
		}
	})
}

func TestStopDuringBackoffCancelsRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &fakeRunner{}
		s := startSup(t, r, Timing{})
		s.Do(t.Context(), VerbStart)
		r.last().exit(Exit{Code: 1}) // immediate restart
		synctest.Wait()
		r.last().exit(Exit{Code: 1}) // backoff
		synctest.Wait()
		if st := s.Status(); st.State != Backoff {
			t.Fatalf("want backoff, got %s", st.State)
		}
		st, _ := s.Do(t.Context(), VerbStop)
		time.Sleep(time.Hour) // synctest: virtual time
		synctest.Wait()
		if st.State != Stopped || r.count() != 2 {
			t.Fatalf("state %s after %d starts", st.State, r.count())
		}
	})
}

func TestSpawnFailureSettlesStartWithError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &fakeRunner{fail: errors.New("exec: no such file")}
		s := startSup(t, r, Timing{})
		st, err := s.Do(t.Context(), VerbStart)
		if err != nil || st.State != Backoff || st.LastExit == nil || st.LastExit.Err != "exec: no such file" {
			t.Fatalf("start: %+v %v", st, err)
		}
		if err := s.Signal(t.Context(), syscall.SIGHUP); !errors.Is(err, ErrNotRunning) {
			t.Fatalf("signal without a process: %v", err)
		}
	})
}

func TestRestartWaitsForTheNewProcess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &fakeRunner{exitOn: []syscall.Signal{syscall.SIGTERM}}
		s := startSup(t, r, Timing{})
		s.Do(t.Context(), VerbStart)
		st, err := s.Do(t.Context(), VerbRestart)
		if err != nil || st.State != Running || st.Gen != 2 || st.PID != 1001 {
			t.Fatalf("restart: %+v %v", st, err)
		}
	})
}

func TestTreeShutdownStopsAll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tree := NewTree(t.Context())
		var runners []*fakeRunner
		for _, p := range []string{"b", "a", "c"} {
			r := &fakeRunner{exitOn: []syscall.Signal{syscall.SIGTERM}}
			runners = append(runners, r)
			s, err := tree.Add(Config{ID: ID{"job", p}, Runner: r})
			if err != nil {
				t.Fatal(err)
			}
			s.Do(t.Context(), VerbStart)
		}
		if _, err := tree.Add(Config{ID: ID{"job", "a"}}); err == nil {
			t.Fatal("duplicate add accepted")
		}
		var names []string
		for _, s := range tree.List() {
			names = append(names, s.ID().Process)
		}
		if !slices.Equal(names, []string{"a", "b", "c"}) {
			t.Fatalf("list order %v", names)
		}
		if err := tree.Remove(t.Context(), ID{"job", "b"}); err != nil {
			t.Fatal(err)
		}
		if _, ok := tree.Get(ID{"job", "b"}); ok {
			t.Fatal("removed supervisor still listed")
		}
		if err := tree.Shutdown(t.Context()); err != nil {
			t.Fatal(err)
		}
		for i, r := range runners {
			if got := r.last().signals(); !slices.Equal(got, []syscall.Signal{syscall.SIGTERM}) {
				t.Fatalf("runner %d got %v", i, got)
			}
		}
		if len(tree.List()) != 0 {
			t.Fatal("tree not empty after shutdown")
		}
	})
}

// TestTreeRemoveAllInParallel: processes removed together stop together:
// two that ignore every signal but the kill take one stop ladder, not two,
// and an id not supervised is reported while the others go.
func TestTreeRemoveAllInParallel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tree := NewTree(t.Context())
		tm := Timing{StopTimeout: 15 * time.Second, QuitTimeout: 2 * time.Second}
		ids := []ID{{"job", "a"}, {"job", "b"}, {"job", "c"}}
		for _, id := range ids {
			s, err := tree.Add(Config{ID: id, Timing: tm, Runner: &fakeRunner{}}) // only the kill ends them
			if err != nil {
				t.Fatal(err)
			}
			s.Do(t.Context(), VerbStart)
		}
		start := time.Now()
		err := tree.RemoveAll(t.Context(), []ID{ids[0], ids[1], {"job", "gone"}})
		if err == nil || !strings.Contains(err.Error(), "remove job/gone: not supervised") {
			t.Fatalf("removal error %v", err)
		}
		if took := time.Since(start); took != tm.StopTimeout+tm.QuitTimeout {
			t.Fatalf("two ladders in %v, want one (%v)", took, tm.StopTimeout+tm.QuitTimeout)
		}
		if l := tree.List(); len(l) != 1 || l[0].ID() != ids[2] {
			t.Fatalf("left %v", l)
		}
	})
}

// TestAdopt: an adopted process is Running from the start; its exit is
// restarted through the runner; an unmonitored adoption is left alone.
func TestAdopt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &fakeRunner{}
		adopted := &fakeProc{pid: 42, events: make(chan ProcessEvent, 2)}
		adopted.events <- ProcessEvent{Running: true, ExecPID: 43}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		s := New(Config{ID: ID{"job", "proc"}, Runner: r, Adopt: adopted})
		go s.Run(ctx)
		synctest.Wait()
		if st := s.Status(); st.State != Running || st.PID != 42 || st.ExecPID != 43 || !st.WantUp || r.count() != 0 {
			t.Fatalf("adopted: %+v, starts %d", st, r.count())
		}
		adopted.exit(Exit{Code: 1})
		synctest.Wait()
		if st := s.Status(); st.State != Running || st.PID != 1000 || r.count() != 1 {
			t.Fatalf("after the adopted exit: %+v", st)
		}

		other := &fakeProc{pid: 50, events: make(chan ProcessEvent, 2)}
		s2 := New(Config{ID: ID{"job", "other"}, Runner: r, Adopt: other, Unmonitored: true})
		go s2.Run(ctx)
		other.exit(Exit{Code: 1})
		synctest.Wait()
		if st := s2.Status(); st.State != Stopped || !st.Unmonitored || r.count() != 1 {
			t.Fatalf("unmonitored adoption: %+v", st)
		}
		cancel()
		<-s.Done()
		<-s2.Done()
	})
}

// TestChangesAreObservedBeforeTheReply: whoever a command's reply reaches
// can find the change's events already sent (OnChange runs first).
func TestChangesAreObservedBeforeTheReply(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var seen []State
		r := &fakeRunner{exitOn: []syscall.Signal{syscall.SIGTERM}}
		ctx, cancel := context.WithCancel(context.Background())
		s := New(Config{ID: ID{"job", "proc"}, Runner: r, OnChange: func(st Status) {
			time.Sleep(time.Second) // synctest: virtual time; an observer that takes a while
			mu.Lock()
			seen = append(seen, st.State)
			mu.Unlock()
		}})
		go s.Run(ctx)
		defer func() { cancel(); <-s.Done() }()
		for _, v := range []struct {
			verb Verb
			want State
		}{{VerbStart, Running}, {VerbStop, Stopped}} {
			st, err := s.Do(t.Context(), v.verb)
			mu.Lock()
			last := seen[len(seen)-1]
			mu.Unlock()
			if err != nil || st.State != v.want || last != v.want {
				t.Fatalf("%v: replied %v, observed last %v", v.verb, st.State, last)
			}
		}
	})
}

// TestStartThatNeverRuns: a process that never reports running (its init
// stuck before the executable) is killed once StartTimeout has passed,
// its exit is recorded as a failed start that says why, and it is started
// again; a stop meanwhile still works.
func TestStartThatNeverRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &fakeRunner{silent: true}
		s := startSup(t, r, Timing{StartTimeout: time.Minute})
		if _, err := s.Send(t.Context(), VerbStart); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		first := r.last()
		time.Sleep(time.Minute - time.Millisecond) // synctest: virtual time
		synctest.Wait()
		if sigs := first.signals(); len(sigs) != 0 || r.count() != 1 {
			t.Fatalf("before the timeout: signals %v, %d starts", sigs, r.count())
		}
		time.Sleep(time.Millisecond) // synctest: virtual time
		synctest.Wait()
		st := s.Status()
		if sigs := first.signals(); !slices.Equal(sigs, []syscall.Signal{syscall.SIGKILL}) || r.count() != 2 {
			t.Fatalf("after the timeout: signals %v, %d starts", sigs, r.count())
		}
		if st.State != Starting || st.LastExit == nil || st.LastExit.String() != "failed to start: did not report running within 1m0s" || st.Restarts != 1 {
			t.Fatalf("status after the timeout: %+v %v", st, st.LastExit)
		}
		go s.Do(t.Context(), VerbStop)
		synctest.Wait()
		r.last().Kill() // the ladder's kill, as the fake ignores signals
		synctest.Wait()
		if st := s.Status(); st.State != Stopped {
			t.Fatalf("stop during the second start: %s", st.State)
		}
	})
}

// TestAdoptedBeforeRun: a supervisor that adopts a running process reads
// running with it (its first instance) from the moment it is made, before
// Run has taken the process over, as it reads once Run has: a reader in
// between (the monit engine's first look) never sees it stopped.
func TestAdoptedBeforeRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &fakeProc{pid: 4242, events: make(chan ProcessEvent, 2)}
		p.events <- ProcessEvent{Running: true, ExecPID: 4243}
		s := New(Config{ID: ID{Job: "j", Process: "p"}, Adopt: p, Unmonitored: true})
		before := s.Status()
		if before.State != Running || !before.WantUp || !before.Unmonitored || before.PID != 4242 || before.Gen != 1 {
			t.Fatalf("before Run: %+v", before)
		}
		ctx, cancel := context.WithCancel(context.Background())
		go s.Run(ctx)
		synctest.Wait()
		after := s.Status()
		if after.State != before.State || after.PID != before.PID || after.Gen != before.Gen || after.ExecPID != 4243 {
			t.Fatalf("before Run %+v, after %+v", before, after)
		}
		cancel()
		<-s.Done()
	})
}
