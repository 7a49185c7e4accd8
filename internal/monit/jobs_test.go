package monit

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
)

// TestActionsRunApart: an action runs as soon as it is posted, beside
// another that is still at work, unless their cascades share a service:
// a stop of lone never waits behind db's (its cascade stops web and api
// first, then db, whose stop hangs); a second action on db is refused
// (503) while its stop is pending, one on web (db's dependant) is taken
// and runs once db's stop is done, in the order posted. What each posted
// action means is what the next daemon would honour, from the moment it
// is posted (Persisted).
func TestActionsRunApart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, fakes, log := fixture(t, chain)
		for _, n := range []string{"db", "api", "web", "lone"} {
			fakes[n].set(running(1))
			e.states[n].lastStarts = 1 // running when the engine began
		}
		fakes["db"].gate = make(chan struct{})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go e.Run(ctx)
		synctest.Wait()
		if err := e.Post("db", "stop"); err != nil {
			t.Fatal(err)
		}
		persisted := func(want string) {
			t.Helper()
			u, s := e.Persisted()
			if got := fmt.Sprint(u, s); got != want {
				t.Fatalf("persisted %s, want %s", got, want)
			}
		}
		persisted("[db api web] [db api web]") // before it ran
		synctest.Wait()
		if got := log.String(); got != "stop:web stop:api" { // db's stop hangs
			t.Fatalf("log %q", got)
		}
		if err := e.Post("lone", "stop"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if got := log.String(); got != "stop:web stop:api stop:lone" {
			t.Fatalf("lone's stop waited for db's: %q", got)
		}
		if err := e.Post("db", "start"); !errors.Is(err, ErrPending) {
			t.Fatalf("a second action on db: %v", err)
		}
		if err := e.Post("web", "start"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		// web's start, posted after db's stop, starts db and api again: the
		// latest action stands for each service; lone is stopped, nothing
		// of it left.
		persisted("[lone] []")
		close(fakes["db"].gate)
		synctest.Wait()
		if got := log.String(); got != "stop:web stop:api stop:lone stop:db start:db start:api start:web" {
			t.Fatalf("log %q", got)
		}
		persisted("[lone] []")
		for _, n := range []string{"db", "api", "web"} { // started, running: checked by their start
			if svc, _ := e.cfg.Lookup(n); statusOf(e, svc).Monitor != Monitored {
				t.Fatalf("%s reads %+v after its start", n, statusOf(e, svc))
			}
		}
		for _, n := range []string{"db", "web", "lone"} {
			if p := e.Pending(n); p != PendingNone {
				t.Fatalf("%s: pending %d", n, p)
			}
		}
	})
}

// TestEndedEngineTakesNoAction: once Run has returned (a reload ended the
// engine), a posted action is refused as pending (the agent asks again,
// and the next engine takes it); an action the end cut short is left
// for the next engine (Unfinished, Repost).
func TestEndedEngineTakesNoAction(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, fakes, _ := fixture(t, chain)
		fakes["lone"].set(running(1))
		e.states["lone"].lastStarts = 1
		fakes["lone"].gate = make(chan struct{})
		ctx, cancel := context.WithCancel(context.Background())
		ran := make(chan struct{})
		go func() { defer close(ran); e.Run(ctx) }()
		synctest.Wait()
		if err := e.Post("lone", "stop"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		cancel()
		close(fakes["lone"].gate) // the stop in flight ends with the engine
		<-ran
		if err := e.Post("db", "start"); !errors.Is(err, ErrPending) {
			t.Fatalf("an ended engine took an action: %v", err)
		}
		if got := fmt.Sprint(e.Unfinished()); got != "map[lone:stop]" {
			t.Fatalf("unfinished %s", got)
		}
		next, nextFakes, _ := fixture(t, chain)
		nextFakes["lone"].set(running(1))
		next.Repost(e.Unfinished())
		if next.Pending("lone") != PendingStop {
			t.Fatalf("not reposted: %d", next.Pending("lone"))
		}
	})
}

// TestPostedActionTakesTheCheck: an action posted and not yet claimed by
// the dispatcher takes the place of the checks that could act on its
// service, as monit's scheduled action skips the service's check: db's
// check (a dead db, whose restart would stop and start web around it) is
// skipped while web's unmonitor is posted; lone's runs. Before, a cycle
// woken by the post could restart web under the agent's unmonitor.
func TestPostedActionTakesTheCheck(t *testing.T) {
	e, _, log := fixture(t, chain)
	if err := e.Post("web", "unmonitor"); err != nil {
		t.Fatal(err)
	}
	db, _ := e.cfg.Lookup("db")
	changed := false
	if e.check(t.Context(), db, &systemSampler{}, &changed) {
		t.Fatalf("db was checked under web's posted unmonitor: %q", log.String())
	}
	if got := log.String(); got != "" {
		t.Fatalf("db's check acted: %q", got)
	}
	lone, _ := e.cfg.Lookup("lone")
	if !e.check(t.Context(), lone, &systemSampler{}, &changed) {
		t.Fatal("lone's check was skipped")
	}
}
