package monit

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/vigil-bosh/vigil/internal/monit/monitrc"
)

// spawns records the programs an engine runs, with the time of each.
type spawns struct {
	mu   sync.Mutex
	runs []string
}

func (s *spawns) spawn(t0 time.Time) func(p *monitrc.Program, env []string, endOnFailure bool) {
	return func(p *monitrc.Program, env []string, _ bool) {
		s.mu.Lock()
		defer s.mu.Unlock()
		event := ""
		for _, e := range env {
			if v, ok := strings.CutPrefix(e, "MONIT_EVENT="); ok {
				event = v
			}
		}
		s.runs = append(s.runs, time.Since(t0).String()+" "+strings.Join(p.Argv, " ")+" ("+event+")")
	}
}

// programs lists the runs without their times.
func (s *spawns) programs() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, r := range s.runs {
		_, rest, _ := strings.Cut(r, " ")
		out = append(out, rest)
	}
	return strings.Join(out, "; ")
}

func (s *spawns) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.runs, "; ")
}

// running is a fake unit's status of a process that runs (this test's
// pid, so that the engine's own look at it finds it alive).
func running(starts int) UnitStatus {
	return UnitStatus{Running: true, Monitor: Monitored, PID: os.Getpid(), PPID: os.Getppid(), Starts: starts}
}

// TestRestartRateExec: monit's counting (validate.c check_timeout). The
// daemon's start at boot is the first restart; a crash the supervisor
// restarts is the second, seen at the next cycle, which restarts the
// dependants around it; the rule holds at the cycle after (ncycle 3 of
// 3): its program runs then, and only then, with no hold-off of any kind;
// Timeout stays in the status afterwards, as monit shows it.
func TestRestartRateExec(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, fakes, log := fixture(t, `
check process web with pidfile /p/web.pid
  start program "/bin/web start"
  stop program "/bin/web stop"
  if 2 restarts within 3 cycles then exec "/bin/rate web"
check process api with pidfile /p/api.pid
  start program "/bin/api start"
  depends on web
`)
		t0 := time.Now()
		var sp spawns
		e.opts.Spawn = sp.spawn(t0)
		e.states["web"].booting = true // the engine starts it, as monit's first cycle
		fakes["api"].set(running(1))
		e.states["api"].lastStarts = 1 // adopted: running when the engine began
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go e.Run(ctx)
		time.Sleep(15 * time.Second) // cycles at 0s (boot) and 10s
		synctest.Wait()
		if sp.String() != "" || log.String() != "start:web" {
			t.Fatalf("before the crash: programs %q, actions %q", sp.String(), log)
		}
		fakes["web"].set(running(2)) // crashed and restarted by its supervisor
		time.Sleep(10 * time.Second) // the cycle at 20s sees the restart
		synctest.Wait()
		if got := log.String(); got != "start:web stop:api start:web start:api" { // web runs: its start only waits
			t.Fatalf("the restart's cascade: %q", got)
		}
		if sp.String() != "" {
			t.Fatalf("the rule ran at the restart's own cycle: %s", sp.String())
		}
		time.Sleep(30 * time.Second) // cycles at 30s, 40s and 50s
		synctest.Wait()
		if got := sp.String(); got != "30s /bin/rate web (Timeout)" {
			t.Fatalf("programs: %q", got)
		}
		// monit 5.2.5 never posts the rule's recovery: Timeout stays, with
		// the message of the cycle it last held, once the rule no longer
		// holds, as monit shows it.
		st := statusOf(e, e.cfg.Services[0])
		if st.Events&EventTimeout == 0 || st.Message != "service restarted 2 times within 3 cycles(s) - exec" {
			t.Fatalf("Timeout gone once the rule no longer holds: %+v", st)
		}
		if got := StatusWord(e.cfg.Services[0], st, PendingNone); got != "Timeout" {
			t.Fatalf("status word %q", got)
		}
	})
}

// TestRestartRateTimeout: "then timeout" unmonitors the service and its
// dependants, as monit 5.2.5 does, and leaves the processes as they are.
func TestRestartRateTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, fakes, log := fixture(t, `
check process web with pidfile /p/web.pid
  if 1 restarts within 1 cycles then timeout
check process api with pidfile /p/api.pid
  depends on web
`)
		fakes["web"].set(running(1))
		fakes["api"].set(running(1))
		e.states["web"].lastStarts, e.states["api"].lastStarts = 1, 1 // adopted: running when the engine began
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go e.Run(ctx)
		time.Sleep(5 * time.Second)
		synctest.Wait()
		fakes["web"].set(running(2))
		time.Sleep(20 * time.Second) // 10s sees the restart, 20s the rule
		synctest.Wait()
		if got := log.String(); got != "stop:api start:web start:api unmonitor:api unmonitor:web" {
			t.Fatalf("actions: %q", got)
		}
		for _, n := range []string{"web", "api"} {
			svc, _ := e.cfg.Lookup(n)
			if st := statusOf(e, svc); st.Monitor != NotMonitored || st.Events != 0 {
				t.Fatalf("%s: %+v", n, st)
			}
		}
	})
}

// staleUnit is a supervisor seen between a death and its own report of
// it: a start asked of it returns at once and changes nothing.
type staleUnit struct{ fakeUnit }

func (u *staleUnit) Start(context.Context) error { u.log.add("start:" + u.name); return nil }

// TestRestartFoundDead: a process found dead at a cycle (its supervisor
// restarts it) counts at that cycle, as monit's restart there does; the
// restart its supervisor then makes, seen at the next cycle, is the same
// one and does not count again.
func TestRestartFoundDead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, err := monitrc.Parse("f", []byte("check process web with pidfile /p/web.pid\n"+
			"  if 2 restarts within 3 cycles then exec \"/bin/rate\"\n"))
		if err != nil {
			t.Fatal(err)
		}
		web := &staleUnit{fakeUnit{name: "web", log: &callLog{}}}
		web.set(running(1))
		var sp spawns
		e := NewEngineWith(&monitrc.Config{Cycle: 10 * time.Second, Services: f.Services},
			map[string]Unit{"web": web}, EngineOptions{Spawn: sp.spawn(time.Now())})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go e.Run(ctx)
		time.Sleep(5 * time.Second)
		synctest.Wait()
		web.set(UnitStatus{Monitor: Monitored, Starts: 1}) // found dead at 10s
		time.Sleep(10 * time.Second)
		synctest.Wait()
		web.set(running(2)) // its supervisor's restart, seen at 20s
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if got := sp.String(); got != "" { // counted twice, the rule would hold at 30s
			t.Fatalf("one restart counted twice: %s", got)
		}
		web.set(running(3)) // a second restart, seen at 30s: the rule holds at 40s
		time.Sleep(20 * time.Second)
		synctest.Wait()
		if got := sp.String(); got != "40s /bin/rate (Timeout)" {
			t.Fatalf("programs: %q", got)
		}
	})
}

// TestCycleAfterAction: a posted action wakes the loop; a cycle follows
// at once, then the interval starts over (monit's validate after a
// wake-up).
func TestCycleAfterAction(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, fakes, _ := fixture(t, chain)
		for _, f := range fakes {
			f.set(running(1))
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go e.Run(ctx)
		time.Sleep(3 * time.Second)
		synctest.Wait()
		first := statusOf(e, e.cfg.Services[0]).Collected
		if err := e.Post("lone", "unmonitor"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if got := statusOf(e, e.cfg.Services[0]).Collected; !got.After(first) || got.Sub(first) != 3*time.Second {
			t.Fatalf("cycle after the action at %v, the first at %v", got, first)
		}
		time.Sleep(9 * time.Second)
		synctest.Wait()
		if got := statusOf(e, e.cfg.Services[0]).Collected; got.Sub(first) != 3*time.Second {
			t.Fatalf("a cycle before the interval was over: %v", got.Sub(first))
		}
	})
}

// TestSystemServiceImplicit: without a check system, monit's own
// system_HOST is a service of the engine, last; with one, there is none.
func TestSystemServiceImplicit(t *testing.T) {
	e, _, _ := fixture(t, chain)
	names := []string{}
	for _, s := range e.Config().Services {
		names = append(names, s.Name)
	}
	if !slices.Equal(names, []string{"db", "api", "web", "lone", "system_f14a1f83-3dc9"}) {
		t.Fatalf("services %v", names)
	}
	e2, _, _ := fixture(t, "check system box\n")
	if n := len(e2.Config().Services); n != 1 {
		t.Fatalf("%d services with a check system", n)
	}
}

// TestNotExistBeforeSupervisor: a process whose "if not exist" action is
// not a restart is found gone by the cycle's own look, while its
// supervisor still reports it running, and the action runs at that cycle.
func TestNotExistBeforeSupervisor(t *testing.T) {
	gone := exec.Command("/bin/true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	synctest.Test(t, func(t *testing.T) {
		f, err := monitrc.Parse("f", []byte("check process web with pidfile /p/web.pid\n"+
			"  if not exist then exec \"/bin/gone\"\n"))
		if err != nil {
			t.Fatal(err)
		}
		web := &fakeUnit{name: "web", log: &callLog{}}
		web.set(running(1))
		var sp spawns
		e := NewEngineWith(&monitrc.Config{Cycle: 10 * time.Second, Services: f.Services},
			map[string]Unit{"web": web}, EngineOptions{Spawn: sp.spawn(time.Now())})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go e.Run(ctx)
		time.Sleep(5 * time.Second)
		synctest.Wait()
		st := running(1)
		st.PID = gone.Process.Pid // dead and reaped; the supervisor has not said so
		web.set(st)
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if got := sp.String(); got != "10s /bin/gone (Does not exist)" {
			t.Fatalf("programs: %q", got)
		}
	})
}

// TestCycleTellsOfTheEndOfInitializing: the cycle that first looks at a
// service ends its "initializing" with no event changing; watchers are told
// of that cycle, and of no later one that changes nothing.
func TestCycleTellsOfTheEndOfInitializing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, fakes, _ := fixture(t, "check process lone with pidfile /p/lone.pid\n  start program \"/bin/lone start\"\n")
		fakes["lone"].set(running(1))
		var mu sync.Mutex
		told := 0
		e.opts.OnChange = func() { mu.Lock(); told++; mu.Unlock() }
		if st := statusOf(e, e.cfg.Services[0]); st.Monitor != Initializing {
			t.Fatalf("before the first cycle: monitor %d, want initializing", st.Monitor)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go e.Run(ctx)
		time.Sleep(25 * time.Second) // cycles at 0s, 10s and 20s
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if st := statusOf(e, e.cfg.Services[0]); st.Monitor != Monitored || told != 1 {
			t.Fatalf("monitor %d after three cycles, watchers told %d times; want monitored, told once", st.Monitor, told)
		}
	})
}
