package metrics_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"go.yaml.in/yaml/v3"
	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/backend/daemon"
	"github.com/vigil-bosh/vigil/internal/metrics"
	"github.com/vigil-bosh/vigil/internal/metrics/metricstest"
	"github.com/vigil-bosh/vigil/internal/testproc"
	"github.com/vigil-bosh/vigil/internal/testroot"
)

func TestMain(m *testing.M) {
	testproc.Main()
	os.Exit(m.Run())
}

// readmeBlock returns the README's first ```yaml block whose text starts
// with prefix.
func readmeBlock(t *testing.T, prefix string) string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, block := range strings.Split(string(b), "```yaml\n")[1:] {
		text, _, _ := strings.Cut(block, "```")
		if strings.HasPrefix(text, prefix) {
			return text
		}
	}
	t.Fatalf("README.md has no yaml block starting %q", prefix)
	return ""
}

// rulesFile is the part of a Prometheus rules file the test reads.
type rulesFile struct {
	Groups []struct {
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Expr        string            `yaml:"expr"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

// TestReadmeAlertsWork runs the README's alert rules with Prometheus' own
// promtool against a real daemon's metrics: the scrape configuration and
// the rules are valid, every metric the rules name is in a scrape, and,
// fed with two scrapes of a daemon (one after it started, one after a
// process was killed four times, another failed for good, a third was
// stopped by an operator and a fourth outgrew its limits.memory), each
// alert fires for exactly the process it is about: the process stopped on
// purpose fires none.
func TestReadmeAlertsWork(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if p := os.Getenv("VIGIL_PROMTOOL"); p != "" {
		promtool, err = p, nil
	}
	if err != nil {
		t.Skip("no promtool on PATH (Debian: apt-get install prometheus): the test needs Prometheus' own tool")
	}
	dir := t.TempDir()
	rulesText := readmeBlock(t, "groups:")
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(promtool, args...).CombinedOutput(); err != nil {
			t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	run("check", "config", write("prometheus.yml", readmeBlock(t, "scrape_configs:")))
	run("check", "rules", write("rules.yml", rulesText))
	var rules rulesFile
	if err := yaml.Unmarshal([]byte(rulesText), &rules); err != nil {
		t.Fatal(err)
	}

	before, after := scrapeScenario(t)
	names := map[string]bool{}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			for _, n := range regexp.MustCompile(`\bvigil_[a-z_]+`).FindAllString(r.Expr, -1) {
				if after[n] == nil {
					t.Errorf("alert %s uses %s, which no scrape has", r.Alert, n)
				}
				names[n] = true
			}
		}
	}
	if t.Failed() {
		return
	}
	expect := map[string]string{ // the process each alert is for
		"VigilProcessDown": "crash/once", "VigilProcessRestarting": "app/server", "VigilProcessNearMemoryLimit": "mem/hog",
	}
	test := promtoolTest{RuleFiles: []string{"rules.yml"}, EvaluationInterval: "1m"}
	unit := promtoolUnit{Interval: "1m", InputSeries: inputSeries(before, after, slices.Sorted(maps.Keys(names)))}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			id, ok := expect[r.Alert]
			if !ok {
				t.Fatalf("README alert %s: the test does not know what should fire it", r.Alert)
			}
			job, proc, _ := strings.Cut(id, "/")
			labels := map[string]string{"bosh_job": job, "bosh_process": proc, "instance": instance, "job": "vigil"}
			annotations := map[string]string{}
			for k, v := range r.Annotations {
				for l, lv := range labels {
					v = strings.ReplaceAll(v, "{{ $labels."+l+" }}", lv)
				}
				annotations[k] = v
			}
			maps.Copy(labels, r.Labels)
			unit.AlertTests = append(unit.AlertTests, promtoolAlertTest{EvalTime: "20m", AlertName: r.Alert,
				ExpAlerts: []promtoolAlert{{Labels: labels, Annotations: annotations}}})
		}
	}
	test.Tests = []promtoolUnit{unit}
	b, err := yaml.Marshal(test)
	if err != nil {
		t.Fatal(err)
	}
	run("test", "rules", write("rules_test.yml", string(b)))
}

// instance is the target the series are scraped from, as Prometheus
// labels them.
const instance = "10.0.16.5:2824"

type promtoolTest struct {
	RuleFiles          []string       `yaml:"rule_files"`
	EvaluationInterval string         `yaml:"evaluation_interval"`
	Tests              []promtoolUnit `yaml:"tests"`
}

type promtoolUnit struct {
	Interval    string              `yaml:"interval"`
	InputSeries []promtoolSeries    `yaml:"input_series"`
	AlertTests  []promtoolAlertTest `yaml:"alert_rule_test"`
}

type promtoolSeries struct {
	Series string `yaml:"series"`
	Values string `yaml:"values"`
}

type promtoolAlertTest struct {
	EvalTime  string          `yaml:"eval_time"`
	AlertName string          `yaml:"alertname"`
	ExpAlerts []promtoolAlert `yaml:"exp_alerts"`
}

type promtoolAlert struct {
	Labels      map[string]string `yaml:"exp_labels"`
	Annotations map[string]string `yaml:"exp_annotations"`
}

// inputSeries turns two scrapes into promtool's input: each series of the
// families named, labelled as Prometheus would label it (job, instance),
// with the first scrape's value for ten minutes and the second's for ten
// more ("_" where a scrape has no such series).
func inputSeries(before, after map[string]*dto.MetricFamily, names []string) []promtoolSeries {
	type sample struct{ before, after string }
	var out []promtoolSeries
	for _, name := range names {
		series := map[string]*sample{}
		for i, fams := range []map[string]*dto.MetricFamily{before, after} {
			for _, m := range fams[name].GetMetric() {
				labels := []string{`instance="` + instance + `"`, `job="vigil"`}
				for _, l := range m.GetLabel() {
					labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
				}
				slices.Sort(labels)
				id := name + "{" + strings.Join(labels, ",") + "}"
				if series[id] == nil {
					series[id] = &sample{"_", "_"}
				}
				v := strconv.FormatFloat(m.GetGauge().GetValue()+m.GetCounter().GetValue(), 'g', -1, 64)
				if i == 0 {
					series[id].before = v
				} else {
					series[id].after = v
				}
			}
		}
		for _, id := range slices.Sorted(maps.Keys(series)) {
			s := series[id]
			out = append(out, promtoolSeries{Series: id, Values: fmt.Sprintf("%sx9 %sx10", orStay(s.before), orStay(s.after))})
		}
	}
	return out
}

// orStay is a value repeated by promtool's "vxN" ("_xN" for none).
func orStay(v string) string {
	if v == "_" {
		return v
	}
	return v + "+0"
}

// scrapeScenario runs a daemon on real processes and scrapes its metrics
// twice: once all have started (crash/once has already failed for good),
// and again after app/server was killed four times (and restarted each
// time) and admin/tool was stopped by an operator. mem/hog runs with a
// limits.memory far under what it holds (isolation is off, so nothing
// enforces it).
func scrapeScenario(t *testing.T) (before, after map[string]*dto.MetricFamily) {
	r := testroot.New(t, "")
	r.Job("app", testroot.Proc{Name: "server", Behaviour: "serve"})
	r.Job("crash", testroot.Proc{Name: "once", Behaviour: "exit", Env: []string{testproc.EnvCode + "=3"},
		YAML: "  restart: {policy: never}\n"})
	r.Job("admin", testroot.Proc{Name: "tool", Behaviour: "serve"})
	r.Job("mem", testroot.Proc{Name: "hog", Behaviour: "serve", YAML: "  limits: {memory: 1M}\n"})
	d, err := daemon.New(daemon.Config{Layout: r.Layout, Init: r.Self, InitEnv: []string{"GORACE=" + testproc.NoRaceExitDelay},
		NoIsolation: true, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	events, err := d.Events(t.Context(), 0) // before Run: the first load's events too
	if err != nil {
		t.Fatal(err)
	}
	m := metrics.New()
	ctx, cancel := context.WithCancel(context.Background())
	done, followed := make(chan error, 1), make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	go func() { followed <- m.Follow(ctx, d) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("daemon: %v", err)
		}
		<-followed
	})
	<-d.Ready()
	for range 3 {
		r.Rep.Expect(t, "ready")
	}
	waitEvent(t, events, "crash/once", control.EventGaveUp)
	h := m.Handler(d)
	before = metricstest.Scrape(t, h)

	if _, err := d.Act(t.Context(), control.ActionRequest{Action: control.ActionStop, Job: "admin"}); err != nil {
		t.Fatal(err)
	}
	server := pidOf(t, d, "app", "server")
	for range 4 {
		if err := unix.Kill(server, unix.SIGKILL); err != nil {
			t.Fatal(err)
		}
		waitEvent(t, events, "app/server", control.EventRestarted)
		server = r.Rep.Expect(t, "ready").PID
	}
	return before, metricstest.Scrape(t, h)
}

// pidOf is the executable's pid of job/proc in d's status.
func pidOf(t *testing.T, d *daemon.Daemon, job, proc string) int {
	t.Helper()
	st, err := d.Status(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range st.Processes {
		if p.Job == job && p.Process == proc && p.ExecPID != 0 {
			return p.ExecPID
		}
	}
	t.Fatalf("%s/%s does not run: %+v", job, proc, st.Processes)
	return 0
}

// waitEvent reads events until one of kind about id ("JOB/PROC") comes.
func waitEvent(t *testing.T, events <-chan control.Event, id, kind string) {
	t.Helper()
	guard := time.NewTimer(testproc.Guard)
	defer guard.Stop()
	for {
		select {
		case ev := <-events:
			if ev.Job+"/"+ev.Process == id && ev.Kind == kind {
				return
			}
		case <-guard.C:
			t.Fatalf("no %s event of %s", kind, id)
		}
	}
}
