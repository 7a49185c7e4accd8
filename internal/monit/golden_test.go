package monit

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("%s differs:\n got:\n%s\nwant:\n%s", name, got, want)
	}
}

// goldenEngine has a service in each state the agent and scripts care about.
func goldenEngine(t *testing.T) *Engine {
	e, fakes, _ := fixture(t, chain+`
check file nfs_mounter path /etc/cron.d/nfs
  group vcap
check process a_service_name_that_is_quite_long with pidfile /p/x.pid
  if failed host 127.0.0.1 port 8080 protocol http request "/healthz" then restart
  if totalmem > 500 Mb for 2 cycles then alert
`)
	fakes["db"].set(UnitStatus{Running: true, Monitor: Monitored, PID: 4242, PPID: 4241, Uptime: 25*time.Hour + 3*time.Minute,
		Children: 2, MemKB: 10240, MemKBTotal: 20480, MemPct: 0.5, MemPctTotal: 1.04, CPUPct: 1.25, CPUPctTotal: 2.5, Collected: t0})
	fakes["api"].set(UnitStatus{Monitor: Initializing, Collected: t0})
	fakes["web"].set(UnitStatus{Monitor: Monitored, Events: EventExec, Message: "failed to start: exited with code 1", Collected: t0})
	fakes["lone"].set(UnitStatus{Monitor: NotMonitored, Collected: t0})
	fakes["nfs_mounter"].set(UnitStatus{Running: true, Monitor: Monitored, Collected: t0})
	fakes["a_service_name_that_is_quite_long"].set(UnitStatus{Monitor: Monitored, Events: EventNonexist,
		Message: "process is not running", Collected: t0})
	for _, st := range e.states {
		st.init = false // as after a cycle
	}
	e.pending["lone"] = PendingStart
	e.pending["a_service_name_that_is_quite_long"] = PendingRestart
	return e
}

var goldenHost = Host{ID: "0123abcd", Hostname: "f14a1f83-3dc9", Now: t0,
	Platform: &Platform{Name: "Linux", Release: "6.8.0-31-generic", Version: "#31-Ubuntu SMP", Machine: "x86_64",
		CPUs: 2, MemKB: 8131212, SwapKB: 0}}

func TestGoldenXML(t *testing.T) { golden(t, "status.xml", StatusXML(goldenEngine(t), goldenHost)) }
func TestGoldenSummary(t *testing.T) {
	golden(t, "summary.txt", []byte(Summary(goldenEngine(t), goldenHost)))
}
func TestGoldenStatus(t *testing.T) {
	golden(t, "status.txt", []byte(FullStatus(goldenEngine(t), goldenHost)))
}

func TestUptime(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0m ", 13 * time.Minute: "13m ", 2*time.Hour + 1*time.Minute: "2h 1m ",
		24 * time.Hour: "1d 0h 0m ", 49*time.Hour + 5*time.Minute: "2d 1h 5m ",
	} {
		if got := Uptime(d); got != want {
			t.Errorf("Uptime(%s) = %q, want %q", d, got, want)
		}
	}
}
