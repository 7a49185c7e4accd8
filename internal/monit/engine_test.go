package monit

import (
	"context"
	"errors"
	"testing"
)

// TestCascades checks monit's dependency cascades (control.c).
func TestCascades(t *testing.T) {
	tests := []struct {
		name, svc, action string
		running           []string // running before the action
		want              string
	}{
		{"start prerequisites first, then dependants", "api", "start", nil,
			"stop:web start:db start:api start:web"},
		{"start a running service only monitors it", "api", "start", []string{"api"},
			"monitor:api"},
		{"start stops the dependants first", "api", "start", []string{"web"},
			"stop:web start:db start:api start:web"},
		{"stop the deepest dependants first", "db", "stop", nil,
			"stop:web stop:api stop:db"},
		{"restart", "api", "restart", nil,
			"stop:web stop:api start:db start:api start:web"},
		{"start of a leaf", "web", "start", nil, "start:db start:api start:web"},
		{"monitor the prerequisites too", "web", "monitor", nil,
			"monitor:db monitor:api monitor:web"},
		{"unmonitor the dependants too", "db", "unmonitor", nil,
			"unmonitor:web unmonitor:api unmonitor:db"},
		{"names are case-insensitive", "LONE", "stop", nil, "stop:lone"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, fakes, log := fixture(t, chain)
			for _, n := range tc.running {
				fakes[n].set(UnitStatus{Running: true, Monitor: Monitored})
			}
			if err := e.Do(context.Background(), tc.svc, tc.action); err != nil {
				t.Fatal(err)
			}
			if got := log.String(); got != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

// TestPost: answered at once; a pending action refuses another; errors
// carry monit's texts.
func TestPost(t *testing.T) {
	e, fakes, log := fixture(t, chain)
	fakes["lone"].gate = make(chan struct{})
	if err := e.Post("nope", "start"); !errors.Is(err, ErrNoService) || err.Error() != "There is no service by that name" {
		t.Fatal(err)
	}
	if err := e.Post("lone", "explode"); !errors.Is(err, ErrAction) || err.Error() != "Invalid action" {
		t.Fatal(err)
	}
	if err := e.Post("lone", "start"); err != nil {
		t.Fatal(err)
	}
	if got := e.Pending("lone"); got != PendingStart {
		t.Fatalf("pending %d", got)
	}
	if err := e.Post("Lone", "stop"); !errors.Is(err, ErrPending) ||
		err.Error() != "Other action already in progress -- please try again later" {
		t.Fatal(err)
	}
	done := make(chan string, 1)
	e.onDone = func(svc, action string, err error) { done <- svc + " " + action }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go e.Run(ctx)
	close(fakes["lone"].gate)
	if got := <-done; got != "lone start" {
		t.Fatal(got)
	}
	if e.Pending("lone") != PendingNone || log.String() != "start:lone" {
		t.Fatalf("pending %d, log %s", e.Pending("lone"), log)
	}
}
