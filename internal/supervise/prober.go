package supervise

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Probe is one configured check of a supervised process. Check must honour
// its context; the prober also bounds it by Timeout, so a check that hangs
// regardless is reported as a failure and never holds the supervisor.
type Probe struct {
	Role             ProbeRole
	Check            func(ctx context.Context) ProbeResult
	Period           time.Duration // zero means 10s
	Timeout          time.Duration // zero means 1s
	InitialDelay     time.Duration
	FailureThreshold int // zero means 3
	SuccessThreshold int // zero means 1
}

// HealthTimingOf derives the thresholds the machine needs from probes.
func HealthTimingOf(probes []Probe, notify bool) HealthTiming {
	h := HealthTiming{Notify: notify}
	for _, p := range probes {
		rt := RoleTiming{Enabled: true, Failure: p.FailureThreshold, Success: p.SuccessThreshold}
		switch p.Role {
		case Startup:
			h.Startup = rt
		case Liveness:
			h.Liveness = rt
		case Readiness:
			h.Readiness = rt
		}
	}
	return h
}

// ReadyNotifier is implemented by a Process whose executable reports its own
// readiness (systemd's NOTIFY_SOCKET or s6's notification fd). The channel
// receives true for "ready" and false when its watchdog expired.
type ReadyNotifier interface {
	Ready() <-chan bool
}

type probeReport struct {
	gen    int
	result ProbeResult
}

// prober runs the probes of one instance, each in its own goroutine, until
// stopped. It is owned by the loop: started when the instance runs, stopped
// when it leaves Running or another instance starts.
type prober struct {
	gen      int
	cancel   context.CancelFunc
	probes   sync.WaitGroup // one runProbe per probe
	gate     chan struct{}  // closed once the startup probe passed
	gateOpen bool
}

func startProber(ctx context.Context, gen int, probes []Probe, out chan<- probeReport) *prober {
	ctx, cancel := context.WithCancel(ctx)
	pr := &prober{gen: gen, cancel: cancel, gate: make(chan struct{})}
	hasStartup := false
	for _, p := range probes {
		hasStartup = hasStartup || p.Role == Startup
	}
	if !hasStartup {
		close(pr.gate)
		pr.gateOpen = true
	}
	for _, p := range probes {
		gate := pr.gate
		if p.Role == Startup {
			gate = nil
		}
		pr.probes.Go(func() { runProbe(ctx, gen, p, gate, out) })
	}
	return pr
}

func (pr *prober) open() {
	if !pr.gateOpen {
		close(pr.gate)
		pr.gateOpen = true
	}
}

// stop ends the probes and waits for them (each gives up at once: runProbe
// never waits on the loop that calls stop without watching ctx too). A
// check a probe abandoned past its timeout ends on its own.
func (pr *prober) stop() {
	pr.cancel()
	pr.probes.Wait()
}

// runProbe checks every period after the initial delay (counted once the
// gate opens) and sends each result to out, giving up when ctx ends.
func runProbe(ctx context.Context, gen int, p Probe, gate <-chan struct{}, out chan<- probeReport) {
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return
		}
	}
	period := p.Period
	if period <= 0 {
		period = 10 * time.Second
	}
	wait := time.NewTimer(p.InitialDelay)
	defer wait.Stop()
	for {
		select {
		case <-wait.C:
		case <-ctx.Done():
			return
		}
		r := bounded(ctx, p)
		r.Role = p.Role
		select {
		case out <- probeReport{gen: gen, result: r}:
		case <-ctx.Done():
			return
		}
		wait.Reset(period)
	}
}

// bounded runs one check and returns within its timeout whatever the check
// does; a check that ignores its context is abandoned (it ends on its own).
func bounded(ctx context.Context, p Probe) ProbeResult {
	timeout := p.Timeout
	if timeout <= 0 {
		timeout = time.Second
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	done := make(chan ProbeResult, 1)
	start := time.Now()
	go func() {
		if p.Check == nil {
			done <- ProbeResult{Message: "no check", At: start}
			return
		}
		done <- p.Check(cctx)
	}()
	select {
	case r := <-done:
		if r.At.IsZero() {
			r.At = start
		}
		return r
	case <-cctx.Done():
		return ProbeResult{Latency: time.Since(start), At: start,
			Message: fmt.Sprintf("probe timed out after %v", timeout)}
	}
}

// probeResult records a report and feeds it to the machine.
func (l *loop) probeResult(rep probeReport) {
	if rep.gen != l.m.gen {
		return // from an instance that is gone
	}
	r := rep.result
	if r.OK {
		r.Failures = 0
	} else if prev := l.lastProbe[r.Role]; prev != nil {
		r.Failures = prev.Failures + 1
	} else {
		r.Failures = 1
	}
	l.lastProbe[r.Role] = &r
	l.handle(event{kind: evProbe, role: r.Role, ok: r.OK, gen: rep.gen})
}

// syncProber runs the probes exactly while the current instance runs.
func (l *loop) syncProber() {
	running := l.m.state == Running && len(l.cfg.Probes) > 0
	if l.prober != nil && (!running || l.prober.gen != l.m.gen) {
		l.stopProber()
	}
	if running && l.prober == nil {
		l.lastProbe = [numRoles]*ProbeResult{}
		l.prober = startProber(l.ctx, l.m.gen, l.cfg.Probes, l.probeC)
	}
	if l.prober != nil && l.m.health.startupDone {
		l.prober.open()
	}
}

func (l *loop) stopProber() {
	if l.prober != nil {
		l.prober.stop()
		l.prober = nil
	}
}

// healthOf derives the published health and readiness.
func healthOf(m machine, t HealthTiming) (string, bool) {
	if m.state != Running {
		return "", false
	}
	if !t.any() {
		return "", true
	}
	started := !t.Startup.Enabled || m.health.startupDone
	ready := started && !m.health.unhealthy
	if t.Readiness.Enabled || t.Notify {
		ready = started && m.health.ready
	}
	switch {
	case !t.Startup.Enabled && !t.Liveness.Enabled:
		return "", ready
	case !started:
		return "starting", false
	case m.health.unhealthy:
		return "unhealthy", ready
	}
	return "healthy", ready
}
