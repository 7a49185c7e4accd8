package job

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Health is vigil's `health` key of a process (bpm ignores it): probes with
// Kubernetes' roles, and readiness notification from the process itself.
type Health struct {
	Startup, Liveness, Readiness *ProbeSpec
	// Notify is "", "systemd" (NOTIFY_SOCKET) or "fd" (s6: a newline on
	// NotifyFD).
	Notify   string
	NotifyFD int
	// Watchdog, with notify: systemd, restarts the process when no
	// WATCHDOG=1 arrives for this long; zero disables it.
	Watchdog time.Duration
}

// ProbeSpec is one probe and its timing. Exactly one check is set.
type ProbeSpec struct {
	HTTP             *HTTPProbe
	TCP              *TCPProbe
	Unix             string
	Exec             []string
	Period           time.Duration // default 10s
	Timeout          time.Duration // default 1s
	InitialDelay     time.Duration
	FailureThreshold int // default 3
	SuccessThreshold int // default 1
}

// HTTPProbe is an HTTP request; Status is "LO-HI" or one code.
type HTTPProbe struct {
	Host, Path, Method, Body string
	Port                     int
	Headers                  map[string]string
	StatusMin, StatusMax     int
}

// TCPProbe is a TCP connection attempt.
type TCPProbe struct {
	Host string
	Port int
}

// RestartSpec is vigil's `restart` key.
type RestartSpec struct {
	Policy  string // "" (always), always, on-failure, never
	Backoff struct{ Initial, Max, ResetAfter time.Duration }
	Limit   struct {
		Count  int
		Within time.Duration
		Then   string   // "" (give-up), give-up, leave-running, exec
		Exec   []string // with Then == "exec"
	}
}

// Dependency is one entry of vigil's `depends_on` key.
type Dependency struct {
	Job, Process string
	Condition    string // started (default) or healthy
}

var healthKeys = keyTable[Health]{
	{"startup", func(c *collector, n *yaml.Node, f string, h *Health) { h.Startup = probeSpec(c, n, f) }},
	{"liveness", func(c *collector, n *yaml.Node, f string, h *Health) { h.Liveness = probeSpec(c, n, f) }},
	{"readiness", func(c *collector, n *yaml.Node, f string, h *Health) { h.Readiness = probeSpec(c, n, f) }},
	{"notify", decodeNotify},
	{"watchdog", func(c *collector, n *yaml.Node, f string, h *Health) { h.Watchdog = duration(c, n, f) }},
}

var probeKeys = keyTable[ProbeSpec]{
	{"http", func(c *collector, n *yaml.Node, f string, p *ProbeSpec) {
		p.HTTP = &HTTPProbe{}
		decodeMap(c, n, f, httpKeys, p.HTTP)
	}},
	{"tcp", func(c *collector, n *yaml.Node, f string, p *ProbeSpec) {
		p.TCP = &TCPProbe{}
		decodeMap(c, n, f, tcpKeys, p.TCP)
	}},
	{"unix", func(c *collector, n *yaml.Node, f string, p *ProbeSpec) { p.Unix = str(c, n, f) }},
	{"exec", func(c *collector, n *yaml.Node, f string, p *ProbeSpec) { p.Exec = strs(c, n, f) }},
	{"period", func(c *collector, n *yaml.Node, f string, p *ProbeSpec) { p.Period = duration(c, n, f) }},
	{"timeout", func(c *collector, n *yaml.Node, f string, p *ProbeSpec) { p.Timeout = duration(c, n, f) }},
	{"initial_delay", func(c *collector, n *yaml.Node, f string, p *ProbeSpec) { p.InitialDelay = duration(c, n, f) }},
	{"failure_threshold", func(c *collector, n *yaml.Node, f string, p *ProbeSpec) { p.FailureThreshold = count(c, n, f) }},
	{"success_threshold", func(c *collector, n *yaml.Node, f string, p *ProbeSpec) { p.SuccessThreshold = count(c, n, f) }},
}

var httpKeys = keyTable[HTTPProbe]{
	{"host", func(c *collector, n *yaml.Node, f string, h *HTTPProbe) { h.Host = str(c, n, f) }},
	{"port", func(c *collector, n *yaml.Node, f string, h *HTTPProbe) { h.Port = port(c, n, f) }},
	{"path", func(c *collector, n *yaml.Node, f string, h *HTTPProbe) { h.Path = str(c, n, f) }},
	{"method", func(c *collector, n *yaml.Node, f string, h *HTTPProbe) { h.Method = str(c, n, f) }},
	{"headers", func(c *collector, n *yaml.Node, f string, h *HTTPProbe) { h.Headers = strMap(c, n, f) }},
	{"body", func(c *collector, n *yaml.Node, f string, h *HTTPProbe) { h.Body = str(c, n, f) }},
	{"status", func(c *collector, n *yaml.Node, f string, h *HTTPProbe) {
		h.StatusMin, h.StatusMax = statusRange(c, n, f)
	}},
}

var tcpKeys = keyTable[TCPProbe]{
	{"host", func(c *collector, n *yaml.Node, f string, t *TCPProbe) { t.Host = str(c, n, f) }},
	{"port", func(c *collector, n *yaml.Node, f string, t *TCPProbe) { t.Port = port(c, n, f) }},
}

var restartKeys = keyTable[RestartSpec]{
	{"policy", func(c *collector, n *yaml.Node, f string, r *RestartSpec) { r.Policy = str(c, n, f) }},
	{"backoff", func(c *collector, n *yaml.Node, f string, r *RestartSpec) {
		decodeMap(c, n, f, keyTable[RestartSpec]{
			{"initial", func(c *collector, n *yaml.Node, f string, r *RestartSpec) { r.Backoff.Initial = duration(c, n, f) }},
			{"max", func(c *collector, n *yaml.Node, f string, r *RestartSpec) { r.Backoff.Max = duration(c, n, f) }},
			{"reset_after", func(c *collector, n *yaml.Node, f string, r *RestartSpec) { r.Backoff.ResetAfter = duration(c, n, f) }},
		}, r)
	}},
	{"limit", func(c *collector, n *yaml.Node, f string, r *RestartSpec) {
		decodeMap(c, n, f, keyTable[RestartSpec]{
			{"count", func(c *collector, n *yaml.Node, f string, r *RestartSpec) { r.Limit.Count = count(c, n, f) }},
			{"within", func(c *collector, n *yaml.Node, f string, r *RestartSpec) { r.Limit.Within = duration(c, n, f) }},
			{"then", decodeThen},
		}, r)
	}},
}

var dependencyKeys = keyTable[Dependency]{
	{"job", func(c *collector, n *yaml.Node, f string, d *Dependency) { d.Job = str(c, n, f) }},
	{"process", func(c *collector, n *yaml.Node, f string, d *Dependency) { d.Process = str(c, n, f) }},
	{"condition", func(c *collector, n *yaml.Node, f string, d *Dependency) { d.Condition = str(c, n, f) }},
}

func probeSpec(c *collector, n *yaml.Node, f string) *ProbeSpec {
	p := &ProbeSpec{}
	if !decodeMap(c, n, f, probeKeys, p) {
		return nil
	}
	return p
}

func dependencies(c *collector, n *yaml.Node, f string) []Dependency {
	var out []Dependency
	for i, item := range c.items(n, f) {
		var d Dependency
		decodeMap(c, item, index(f, i), dependencyKeys, &d)
		out = append(out, d)
	}
	return out
}

// decodeThen reads `then: give-up | leave-running | {exec: [argv...]}`.
func decodeThen(c *collector, n *yaml.Node, f string, r *RestartSpec) {
	if m := resolve(n); m != nil && m.Kind == yaml.MappingNode {
		r.Limit.Then = "exec"
		decodeMap(c, n, f, keyTable[RestartSpec]{
			{"exec", func(c *collector, n *yaml.Node, f string, r *RestartSpec) { r.Limit.Exec = strs(c, n, f) }},
		}, r)
		if len(r.Limit.Exec) == 0 && !c.bad[join(f, "exec")] {
			c.fail(n.Line, f, nil, "then must be give-up, leave-running or {exec: [COMMAND, ARGS...]}")
		}
		return
	}
	r.Limit.Then = str(c, n, f)
}

func decodeNotify(c *collector, n *yaml.Node, f string, h *Health) {
	s := str(c, n, f)
	switch {
	case s == "" || s == "systemd":
		h.Notify = s
	case strings.HasPrefix(s, "fd:"):
		fd, err := strconv.Atoi(s[3:])
		if err != nil || fd < 3 || fd > 1023 {
			c.fail(n.Line, f, err, "notify fd must be a number from 3 to 1023, but got %q", s[3:])
			return
		}
		h.Notify, h.NotifyFD = "fd", fd
	default:
		c.fail(n.Line, f, nil, "notify must be systemd or fd:N, but got %q", s)
	}
}

// duration reads a Go duration such as 10s or 500ms; it must not be negative.
func duration(c *collector, n *yaml.Node, f string) time.Duration {
	s, ok := scalar[string](c, n, f, "a duration such as 10s or 500ms")
	if !ok {
		return 0
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		c.fail(n.Line, f, err, "expected a duration such as 10s or 500ms, got %q", s)
		return 0
	}
	return d
}

func count(c *collector, n *yaml.Node, f string) int {
	v, ok := scalar[int](c, n, f, "a positive integer")
	if ok && v < 1 {
		c.fail(n.Line, f, nil, "expected a positive integer, got %d", v)
		return 0
	}
	return v
}

func port(c *collector, n *yaml.Node, f string) int {
	v, ok := scalar[int](c, n, f, "a port number")
	if ok && (v < 1 || v > 65535) {
		c.fail(n.Line, f, nil, "port must be from 1 to 65535, got %d", v)
		return 0
	}
	return v
}

// statusRange reads an HTTP status code or range such as 200-399.
func statusRange(c *collector, n *yaml.Node, f string) (int, int) {
	s, ok := scalar[string](c, n, f, "a status code or range such as 200-399")
	if !ok {
		return 0, 0
	}
	lo, hi, isRange := strings.Cut(s, "-")
	if !isRange {
		hi = lo
	}
	a, err1 := strconv.Atoi(strings.TrimSpace(lo))
	b, err2 := strconv.Atoi(strings.TrimSpace(hi))
	if err1 != nil || err2 != nil || a < 100 || b > 599 || a > b {
		c.fail(n.Line, f, nil, "expected a status code or range such as 200-399, got %q", s)
		return 0, 0
	}
	return a, b
}

// checkHealth validates the health, restart and depends_on keys.
func checkHealth(c *collector, p *Process) {
	roles := []struct {
		name string
		spec *ProbeSpec
	}{{"startup", p.Health.Startup}, {"liveness", p.Health.Liveness}, {"readiness", p.Health.Readiness}}
	for _, r := range roles {
		if r.spec == nil {
			continue
		}
		f := p.field("health." + r.name)
		checks := 0
		for _, set := range []bool{r.spec.HTTP != nil, r.spec.TCP != nil, r.spec.Unix != "", len(r.spec.Exec) > 0} {
			if set {
				checks++
			}
		}
		if checks != 1 {
			c.check(f, nil, "a probe needs exactly one of http, tcp, unix or exec, but has %d", checks)
		}
		if r.spec.HTTP != nil && r.spec.HTTP.Port == 0 {
			c.check(join(f, "http.port"), nil, "an http probe needs a port")
		}
		if r.spec.TCP != nil && r.spec.TCP.Port == 0 {
			c.check(join(f, "tcp.port"), nil, "a tcp probe needs a port")
		}
		if r.name != "readiness" && r.spec.SuccessThreshold > 1 {
			c.check(join(f, "success_threshold"), nil, "success_threshold of a %s probe must be 1", r.name)
		}
	}
	if p.Health.Watchdog > 0 && p.Health.Notify != "systemd" {
		c.check(p.field("health.watchdog"), nil, "watchdog needs notify: systemd")
	}
	rs := p.Restart
	switch rs.Policy {
	case "", "always", "on-failure", "never":
	default:
		c.check(p.field("restart.policy"), nil, "policy must be always, on-failure or never, but got %q", rs.Policy)
	}
	switch rs.Limit.Then {
	case "", "give-up", "leave-running", "exec":
	default:
		c.check(p.field("restart.limit.then"), nil, "then must be give-up, leave-running or {exec: [COMMAND, ARGS...]}, but got %q", rs.Limit.Then)
	}
	if rs.Backoff.Max > 0 && rs.Backoff.Initial > rs.Backoff.Max {
		c.check(p.field("restart.backoff.initial"), nil, "initial (%v) is longer than max (%v)", rs.Backoff.Initial, rs.Backoff.Max)
	}
	for i, d := range p.DependsOn {
		f := p.field(index("depends_on", i))
		if d.Job == "" || d.Process == "" {
			c.check(f, nil, "a dependency needs job and process")
		}
		switch d.Condition {
		case "", "started", "healthy":
		default:
			c.check(join(f, "condition"), nil, "condition must be started or healthy, but got %q", d.Condition)
		}
	}
}

// String describes a dependency for messages.
func (d Dependency) String() string { return fmt.Sprintf("%s/%s (%s)", d.Job, d.Process, d.Condition) }

func (h Health) equal(o Health) bool {
	return h.Startup.equal(o.Startup) && h.Liveness.equal(o.Liveness) && h.Readiness.equal(o.Readiness) &&
		h.Notify == o.Notify && h.NotifyFD == o.NotifyFD && h.Watchdog == o.Watchdog
}

func (p *ProbeSpec) equal(o *ProbeSpec) bool {
	if p == nil || o == nil {
		return p == o
	}
	return p.HTTP.equal(o.HTTP) && ptrEqual(p.TCP, o.TCP) && p.Unix == o.Unix && slices.Equal(p.Exec, o.Exec) &&
		p.Period == o.Period && p.Timeout == o.Timeout && p.InitialDelay == o.InitialDelay &&
		p.FailureThreshold == o.FailureThreshold && p.SuccessThreshold == o.SuccessThreshold
}

func (h *HTTPProbe) equal(o *HTTPProbe) bool {
	if h == nil || o == nil {
		return h == o
	}
	return h.Host == o.Host && h.Path == o.Path && h.Method == o.Method && h.Body == o.Body && h.Port == o.Port &&
		maps.Equal(h.Headers, o.Headers) && h.StatusMin == o.StatusMin && h.StatusMax == o.StatusMax
}

func (r RestartSpec) equal(o RestartSpec) bool {
	return r.Policy == o.Policy && r.Backoff == o.Backoff && r.Limit.Count == o.Limit.Count &&
		r.Limit.Within == o.Limit.Within && r.Limit.Then == o.Limit.Then && slices.Equal(r.Limit.Exec, o.Limit.Exec)
}

// Locate returns the field path of a key of p (such as "depends_on[0]") as
// errors name it, and the line it was read from (0 when unknown), for
// checks made outside job, like dependency cycles across jobs.
func (p Process) Locate(key string) (field string, line int) {
	field = p.field(key)
	if p.at != nil {
		line = lineOf(p.at.lines, field)
	}
	if line == 0 {
		line = p.Source.Line
	}
	return field, line
}
