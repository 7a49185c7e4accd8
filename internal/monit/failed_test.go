package monit

import (
	"testing"
)

// TestFailedUnit: monitored, it reads as monit's "Execution failed" with
// the reason; a start fails and monitors it again, alerting once per
// change; a stop leaves it not monitored.
func TestFailedUnit(t *testing.T) {
	alerts := 0
	u := NewFailedUnit("no valid bpm.yml defines bpm process web/web", true, func() { alerts++ })
	check := func(when string, monitor, events, wantAlerts int) {
		t.Helper()
		st := u.Status()
		if st.Monitor != monitor || st.Events != events || st.Running || st.PID != 0 || alerts != wantAlerts {
			t.Fatalf("%s: monitor %d events %#x running %v pid %d alerts %d; want monitor %d events %#x alerts %d",
				when, st.Monitor, st.Events, st.Running, st.PID, alerts, monitor, events, wantAlerts)
		}
		if monitor == Monitored && st.Message != "failed to start: no valid bpm.yml defines bpm process web/web" {
			t.Fatalf("%s: message %q", when, st.Message)
		}
	}
	check("new", Monitored, EventExec, 1)
	if err := u.Start(t.Context()); err == nil || err.Error() != "no valid bpm.yml defines bpm process web/web" {
		t.Fatalf("start: %v", err)
	}
	check("started while monitored", Monitored, EventExec, 1)
	if err := u.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	check("stopped", NotMonitored, 0, 1)
	if err := u.Monitor(t.Context()); err != nil {
		t.Fatal(err)
	}
	check("monitored again", Monitored, EventExec, 2)
	if err := u.Unmonitor(t.Context()); err != nil {
		t.Fatal(err)
	}
	check("unmonitored", NotMonitored, 0, 2)
	if u.Start(t.Context()) == nil {
		t.Fatal("a start succeeded")
	}
	check("started", Monitored, EventExec, 3)

	if quiet := NewFailedUnit("why", false, nil); quiet.Status().Monitor != NotMonitored {
		t.Fatal("an unmonitored unit reads monitored")
	}
}
