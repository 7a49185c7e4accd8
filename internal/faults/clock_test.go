package faults

import (
	"errors"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/testproc"
)

// TestClockJumps: the wall clock is stepped a minute forward, then a minute
// back, during a restart's backoff and during a stop's ladder. Each delay
// (a second or two) still lasts what it should, as timers run on the
// monotonic clock: neither at once nor a minute late. A minute is as good
// a proof as an hour and disturbs the machine less. The clock is put back after each jump (to where
// it would be without the jump, measured on the monotonic clock), and each
// jump lasts one delay only. As root only, and only when asked for with
// VIGIL_FAULTS_CLOCK=1: the wall clock is the whole machine's, and `go test
// ./...` runs other packages' tests meanwhile, so CI runs this test on its
// own, after the others.
func TestClockJumps(t *testing.T) {
	const delay, step = time.Second, time.Minute
	if os.Getenv("VIGIL_FAULTS_CLOCK") != "1" {
		t.Skip("steps the machine's wall clock: run alone with VIGIL_FAULTS_CLOCK=1 go test -race -run TestClockJumps ./internal/faults/")
	}
	probeClock(t)
	t.Run("backoff", func(t *testing.T) {
		r := newRig(t)
		r.job("web", tp{name: "crasher", behaviour: "exit", env: []string{"TESTPROC_CODE=1"}})
		r.startDaemon(envBackoff + "=" + delay.String())
		r.rep.Expect(t, "exiting") // the first start; the restart is at once, then 1 s, 2 s ...
		for i, jump := range []time.Duration{step, -step} {
			r.rep.Expect(t, "exiting")
			r.expectLog("process=web/crasher state=backoff") // the timer is armed
			from := time.Now()
			back := stepClock(t, jump)
			r.expectLog("process=web/crasher state=starting")
			took := time.Since(from)
			back()
			checkDelay(t, "backoff", jump, took, delay<<i)
		}
	})
	t.Run("ladder", func(t *testing.T) {
		r := newRig(t)
		r.job("web", tp{name: "stubborn", behaviour: "serve", env: []string{"TESTPROC_IGNORE=TERM,QUIT"}})
		r.up(1, envStop+"="+delay.String())
		stopped := make(chan error, 1)
		go func() {
			_, err := r.client().Act(t.Context(), control.ActionRequest{Action: control.ActionStop, Job: "web"})
			stopped <- err
		}()
		r.rep.Expect(t, "signal TERM")
		r.expectLog("process=web/stubborn state=stopping")
		from := time.Now()
		back := stepClock(t, step)
		r.rep.Expect(t, "signal QUIT")
		took := time.Since(from)
		back()
		checkDelay(t, "SIGQUIT after SIGTERM", step, took, delay)
		from = time.Now()
		back = stepClock(t, -step)
		var err error
		select {
		case err = <-stopped:
		case <-time.After(testproc.Guard): // a failure guard
			t.Fatalf("the stop did not end within %s", testproc.Guard)
		}
		took = time.Since(from)
		back()
		if err != nil {
			t.Fatal(err)
		}
		checkDelay(t, "the kill after SIGQUIT", -step, took, delay)
	})
}

func checkDelay(t *testing.T, what string, jump, took, want time.Duration) {
	t.Helper()
	if took < want*9/10 || took > want+10*time.Second {
		t.Errorf("%s with the clock stepped %s: took %s, want %s", what, jump, took, want)
	}
}

// probeClock skips the test unless the wall clock can be set.
func probeClock(t *testing.T) {
	t.Helper()
	var now unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_REALTIME, &now); err != nil {
		t.Fatal(err)
	}
	if err := unix.ClockSettime(unix.CLOCK_REALTIME, &now); errors.Is(err, unix.EPERM) {
		t.Skip("the wall clock cannot be set here (EPERM): run as root with CAP_SYS_TIME")
	} else if err != nil {
		t.Fatal(err)
	}
}

// stepClock steps the wall clock by d and returns the function that puts
// it back where it would have been without the step; the test's cleanup
// calls it too, should the test end first.
func stepClock(t *testing.T, d time.Duration) (back func()) {
	t.Helper()
	base := time.Now() // wall and monotonic readings
	if err := setWall(base.Add(d)); err != nil {
		t.Fatalf("step the clock: %v", err)
	}
	done := false
	back = func() {
		if done {
			return
		}
		done = true
		if err := setWall(base.Add(time.Since(base))); err != nil { // monotonic elapsed time
			t.Errorf("put the clock back: %v", err)
		}
	}
	t.Cleanup(back)
	return back
}

// setWall sets CLOCK_REALTIME to at's wall reading.
func setWall(at time.Time) error {
	ts := unix.NsecToTimespec(at.Round(0).UnixNano())
	return unix.ClockSettime(unix.CLOCK_REALTIME, &ts)
}
