package job

import (
	"os"
	"slices"
	"testing"
	"time"
)

func TestHealthKeys(t *testing.T) {
	data, err := os.ReadFile("testdata/health.yml")
	if err != nil {
		t.Fatal(err)
	}
	j, warns, err := Parse(vcap, "web", "bpm.yml", data)
	if err != nil || len(warns) != 0 {
		t.Fatalf("parse: %v %v", err, warns)
	}
	web, worker := j.Processes[0], j.Processes[1]
	h := web.Health
	if h.Startup.HTTP.Port != 8080 || h.Startup.HTTP.StatusMin != 200 || h.Startup.HTTP.StatusMax != 299 ||
		h.Startup.FailureThreshold != 60 || h.Startup.Period != time.Second || h.Startup.HTTP.Headers["X-A"] != "b" {
		t.Errorf("startup: %+v %+v", h.Startup, h.Startup.HTTP)
	}
	if h.Liveness.Timeout != time.Second || h.Readiness.TCP.Port != 8080 || h.Readiness.SuccessThreshold != 2 {
		t.Errorf("liveness/readiness: %+v %+v", h.Liveness, h.Readiness)
	}
	if h.Notify != "systemd" || h.Watchdog != 30*time.Second {
		t.Errorf("notify: %+v", h)
	}
	r := web.Restart
	if r.Policy != "always" || r.Backoff.ResetAfter != 10*time.Minute || r.Limit.Count != 10 || r.Limit.Then != "leave-running" {
		t.Errorf("restart: %+v", r)
	}
	if !slices.Equal(web.DependsOn, []Dependency{{"db", "postgres", "healthy"}}) {
		t.Errorf("depends_on: %+v", web.DependsOn)
	}
	if worker.Health.Notify != "fd" || worker.Health.NotifyFD != 5 || worker.Health.Liveness.InitialDelay != 500*time.Millisecond ||
		worker.Health.Readiness.Unix == "" || !slices.Equal(worker.Health.Liveness.Exec, []string{"/bin/check", "--quick"}) {
		t.Errorf("worker health: %+v", worker.Health)
	}
	if worker.Restart.Limit.Then != "exec" || !slices.Equal(worker.Restart.Limit.Exec, []string{"/bin/page", "oncall"}) {
		t.Errorf("worker limit: %+v", worker.Restart.Limit)
	}
}

func TestHealthErrors(t *testing.T) {
	src := `processes:
- name: a
  executable: /bin/a
  health:
    liveness: {http: {port: 99999}, period: soon}
    readiness: {tcp: {port: 1}, unix: /x}
    startup: {exec: [/bin/x], success_threshold: 2}
    notify: fd:1
  restart:
    policy: sometimes
    limit: {count: 0, then: shrug}
  depends_on: [{job: db, condition: warm}]
`
	_, _, err := Parse(vcap, "web", "bpm.yml", []byte(src))
	sameAts(t, "errors", errorsOf(t, err, "bpm.yml"), []at{
		{5, "processes[0].health.liveness.http.port", "port must be from 1 to 65535, got 99999"},
		{5, "processes[0].health.liveness.period", `expected a duration such as 10s or 500ms, got "soon"`},
		{6, "processes[0].health.readiness", "a probe needs exactly one of http, tcp, unix or exec, but has 2"},
		{7, "processes[0].health.startup.success_threshold", "success_threshold of a startup probe must be 1"},
		{8, "processes[0].health.notify", `notify fd must be a number from 3 to 1023, but got "1"`},
		{10, "processes[0].restart.policy", `policy must be always, on-failure or never, but got "sometimes"`},
		{11, "processes[0].restart.limit.count", "expected a positive integer, got 0"},
		{11, "processes[0].restart.limit.then", `then must be give-up, leave-running or {exec: [COMMAND, ARGS...]}, but got "shrug"`},
		{12, "processes[0].depends_on[0]", "a dependency needs job and process"},
		{12, "processes[0].depends_on[0].condition", `condition must be started or healthy, but got "warm"`},
	})
}
