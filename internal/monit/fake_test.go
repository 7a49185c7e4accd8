package monit

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vigil-bosh/vigil/internal/monit/monitrc"
)

// fakeUnit records every call in a shared log and keeps a status.
type fakeUnit struct {
	name string
	log  *callLog
	mu   sync.Mutex
	st   UnitStatus
	gate chan struct{} // when set, Start and Stop wait for it
}

type callLog struct {
	mu    sync.Mutex
	calls []string
}

func (l *callLog) add(s string) { l.mu.Lock(); l.calls = append(l.calls, s); l.mu.Unlock() }
func (l *callLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.calls, " ")
}

func (u *fakeUnit) wait() {
	if u.gate != nil {
		<-u.gate
	}
}

func (u *fakeUnit) Start(context.Context) error {
	u.wait()
	u.log.add("start:" + u.name)
	u.mu.Lock()
	starts := u.st.Starts + 1
	u.mu.Unlock()
	// A live pid (this test's): the engine looks at the process itself.
	u.set(UnitStatus{Running: true, Monitor: Monitored, PID: os.Getpid(), PPID: os.Getppid(), Uptime: 90 * time.Second,
		Starts: starts})
	return nil
}
func (u *fakeUnit) Stop(context.Context) error {
	u.wait()
	u.log.add("stop:" + u.name)
	u.set(UnitStatus{})
	return nil
}
func (u *fakeUnit) Monitor(context.Context) error {
	u.log.add("monitor:" + u.name)
	u.mu.Lock()
	u.st.Monitor = Monitored
	u.mu.Unlock()
	return nil
}
func (u *fakeUnit) Unmonitor(context.Context) error {
	u.log.add("unmonitor:" + u.name)
	u.mu.Lock()
	u.st.Monitor = NotMonitored
	u.mu.Unlock()
	return nil
}
func (u *fakeUnit) Status() UnitStatus { u.mu.Lock(); defer u.mu.Unlock(); return u.st }
func (u *fakeUnit) set(st UnitStatus)  { u.mu.Lock(); u.st = st; u.mu.Unlock() }

var t0 = time.Date(2026, 11, 30, 1, 2, 3, 0, time.UTC)

// fixture parses src and gives every service a fake unit.
func fixture(t *testing.T, src string) (*Engine, map[string]*fakeUnit, *callLog) {
	t.Helper()
	f, err := monitrc.Parse("jobs.monitrc", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	cfg := &monitrc.Config{File: "/var/vcap/bosh/etc/monitrc", Cycle: 10 * time.Second, Services: f.Services,
		HTTPD: &monitrc.HTTPD{Port: 2822, Address: "127.0.0.1", Users: []monitrc.Credential{{User: "vcap", Password: "random-password"}}}}
	log := &callLog{}
	fakes := map[string]*fakeUnit{}
	units := map[string]Unit{}
	for _, s := range f.Services {
		u := &fakeUnit{name: s.Name, log: log}
		fakes[s.Name], units[s.Name] = u, u
	}
	return NewEngineWith(cfg, units, EngineOptions{Started: t0.Add(-(2*time.Hour + 13*time.Minute)),
		Incarnation: 1764464523, Host: "f14a1f83-3dc9"}), fakes, log
}

const chain = `
check process db with pidfile /p/db.pid
  start program "/bin/db start"
  stop program "/bin/db stop"
  group vcap
check process api with pidfile /p/api.pid
  start program "/bin/api start"
  stop program "/bin/api stop"
  depends on db
  group vcap
check process web with pidfile /p/web.pid
  start program "/bin/web start"
  stop program "/bin/web stop"
  depends on api
  group vcap
check process lone with pidfile /p/lone.pid
  start program "/bin/lone start"
  stop program "/bin/lone stop"
`
