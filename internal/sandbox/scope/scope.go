// Package scope puts a process into a systemd transient scope of its own,
// as runc's systemd cgroup driver puts each of bpm's containers: systemd
// makes the scope over its D-Bus API (StartTransientUnit) with the
// process in it, in system.slice, delegated, without default dependencies,
// and with the process's limits as the scope's properties. Everything the
// process starts later is in the scope too, and systemd removes the scope
// once nothing is left in it. It is used only where systemd is PID 1 on
// the unified hierarchy alone (Available).
package scope

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/godbus/dbus/v5"
	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/internal/sandbox/cgroup"
)

// Slice is where the scopes go, as runc's driver puts bpm's.
const Slice = "system.slice"

const (
	dest        = "org.freedesktop.systemd1"
	managerPath = dbus.ObjectPath("/org/freedesktop/systemd1")
	manager     = "org.freedesktop.systemd1.Manager"
	// privateSocket is systemd's own D-Bus socket (root only), which
	// systemctl uses where the bus daemon does not run.
	privateSocket = "unix:path=/run/systemd/private"
)

// Timeouts: the whole of a Place, and within it the wait for a scope of
// the same name (a previous instance's, whose init is ending) to go.
const (
	placeTimeout = 30 * time.Second
	goneTimeout  = 10 * time.Second
)

// Available reports whether processes go into scopes here: systemd is
// PID 1 and says it runs (/run/systemd/system is a directory, sd_booted's
// test), on the unified cgroup hierarchy alone (as on Noble; a hybrid
// host keeps vigil's own groups).
func Available() bool {
	fi, err := os.Lstat("/run/systemd/system")
	if err != nil || !fi.IsDir() {
		return false
	}
	comm, err := os.ReadFile("/proc/1/comm")
	if err != nil || strings.TrimSpace(string(comm)) != "systemd" {
		return false
	}
	var st unix.Statfs_t
	return unix.Statfs("/sys/fs/cgroup", &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC
}

// Manager makes scopes over one connection to systemd, made at the first
// Place and again after it fails. It is safe for concurrent use; Close
// ends the connection.
type Manager struct {
	mu      sync.Mutex
	conn    *dbus.Conn
	waiters map[string][]chan event // unit name → the Places that wait on its signals
	before  []string                // the caller's own service unit, which the scopes are ordered before
	version int                     // systemd's version (its number), read at the connection
	gone    time.Duration           // how long a Place waits for a scope of the same name to go
	waiting func(name string)       // told when a Place begins that wait (tests)
}

// event is one of systemd's signals about a unit a Place waits on.
type event struct {
	removed bool            // UnitRemoved; otherwise JobRemoved
	job     dbus.ObjectPath // JobRemoved's job
	result  string          // JobRemoved's result: done, failed, canceled...
	lost    bool            // the connection closed
}

// New returns a Manager. Nothing connects until the first Place.
func New() *Manager {
	m := &Manager{waiters: map[string][]chan event{}, gone: goneTimeout}
	if u := ownService(); u != "" {
		m.before = []string{u}
	}
	return m
}

// Close ends the connection. A Place in flight fails.
func (m *Manager) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.conn == nil {
		return nil
	}
	err := m.conn.Close()
	m.conn = nil
	return err
}

// Place makes the scope name (NAME.scope, below Slice) with pid in it and
// l as its properties, and returns its cgroup directory once systemd has
// made it and pid is in it. A scope of that name that still exists (a
// previous instance's, whose init is ending) is waited for, up to 10 s;
// a failed one is reset. pid must be the caller's child not yet waited
// for, so that it cannot be another process by the time systemd moves it.
func (m *Manager) Place(ctx context.Context, name string, pid int, l cgroup.Limits) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, placeTimeout)
	defer cancel()
	conn, events, done, err := m.watch(name)
	if err != nil {
		return "", err
	}
	defer done()
	props, err := properties(name, pid, l, m.before, m.systemdVersion())
	if err != nil {
		return "", err
	}
	for {
		var job dbus.ObjectPath
		err := conn.Object(dest, managerPath).CallWithContext(ctx, manager+".StartTransientUnit", 0,
			name, "fail", props, []aux{}).Store(&job)
		if err == nil {
			if err := awaitJob(ctx, events, job, name); err != nil {
				return "", err
			}
			return placed(pid, name)
		}
		if !isError(err, "org.freedesktop.systemd1.UnitExists") {
			m.drop(conn, err)
			return "", fmt.Errorf("scope %s: start: %w", name, err)
		}
		if err := m.awaitGone(ctx, conn, name, events); err != nil {
			return "", err
		}
	}
}

// property and aux are StartTransientUnit's arguments: a(sv) and a(sa(sv)).
type property struct {
	Name  string
	Value dbus.Variant
}

type aux struct {
	Name  string
	Props []property
}

// awaitJob waits for the end of systemd's job for name.
func awaitJob(ctx context.Context, events <-chan event, job dbus.ObjectPath, name string) error {
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("scope %s: systemd did not make it: %w", name, ctx.Err())
		case ev := <-events:
			switch {
			case ev.lost:
				return fmt.Errorf("scope %s: the connection to systemd closed", name)
			case ev.removed || ev.job != job:
			case ev.result != "done":
				return fmt.Errorf("scope %s: systemd's start %s", name, ev.result)
			default:
				return nil
			}
		}
	}
}

// awaitGone returns once a scope of name that exists has gone (a failed
// one is reset first, so that systemd removes it), or fails after m.gone
// (10 s): the scope still runs, and the start fails, to be retried.
func (m *Manager) awaitGone(ctx context.Context, conn *dbus.Conn, name string, events <-chan event) error {
	ctx, cancel := context.WithTimeout(ctx, m.gone)
	defer cancel()
	obj := conn.Object(dest, managerPath)
	var unit dbus.ObjectPath
	if err := obj.CallWithContext(ctx, manager+".GetUnit", 0, name).Store(&unit); err != nil {
		if isError(err, "org.freedesktop.systemd1.NoSuchUnit") {
			return nil // gone meanwhile
		}
		m.drop(conn, err)
		return fmt.Errorf("scope %s: %w", name, err)
	}
	state, err := conn.Object(dest, unit).GetProperty("org.freedesktop.systemd1.Unit.ActiveState")
	if err == nil && state.Value() == "failed" {
		_ = obj.CallWithContext(ctx, manager+".ResetFailedUnit", 0, name).Err
	}
	if m.waiting != nil {
		m.waiting(name)
	}
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("scope %s is still in use (a process of an earlier start runs in it)", name)
		case ev := <-events:
			if ev.lost {
				return fmt.Errorf("scope %s: the connection to systemd closed", name)
			}
			if ev.removed {
				return nil
			}
		}
	}
}

// placed is the cgroup directory of the scope name, read from pid's own
// /proc/PID/cgroup, which must name it.
func placed(pid int, name string) (string, error) {
	dir, err := cgroup.PathOf(pid)
	if err != nil {
		return "", fmt.Errorf("scope %s: %w", name, err)
	}
	if filepath.Base(dir) != name {
		return "", fmt.Errorf("scope %s: process %d runs in %s, not in the scope", name, pid, dir)
	}
	return dir, nil
}

// watch connects if need be and registers for the signals about name; the
// returned func unregisters.
func (m *Manager) watch(name string) (*dbus.Conn, <-chan event, func(), error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.conn == nil {
		conn, err := connect()
		if err != nil {
			return nil, nil, nil, err
		}
		signals := make(chan *dbus.Signal, 64)
		conn.Signal(signals)
		if err := conn.Object(dest, managerPath).Call(manager+".Subscribe", 0).Err; err != nil {
			conn.Close()
			return nil, nil, nil, fmt.Errorf("scope: subscribe to systemd: %w", err)
		}
		m.conn, m.version = conn, versionOf(conn)
		go m.dispatch(conn, signals)
	}
	ch := make(chan event, 16)
	m.waiters[name] = append(m.waiters[name], ch)
	return m.conn, ch, func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		w := m.waiters[name]
		for i, c := range w {
			if c == ch {
				w = append(w[:i], w[i+1:]...)
				break
			}
		}
		if len(w) == 0 {
			delete(m.waiters, name)
		} else {
			m.waiters[name] = w
		}
	}, nil
}

// systemdVersion is the version of the systemd connected to.
func (m *Manager) systemdVersion() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.version
}

// versionOf reads systemd's version number ("257.9-1~deb13u1" → 257); 0
// when it cannot be read.
func versionOf(conn *dbus.Conn) int {
	v, err := conn.Object(dest, managerPath).GetProperty(manager + ".Version")
	if err != nil {
		return 0
	}
	s, _ := v.Value().(string)
	s = strings.TrimPrefix(s, "systemd ")
	end := strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' })
	if end >= 0 {
		s = s[:end]
	}
	n, _ := strconv.Atoi(s)
	return n
}

// connect opens a connection to systemd: the system bus, where only the
// manager's job and unit removals are matched, else systemd's private
// socket.
func connect() (*dbus.Conn, error) {
	conn, err := dbus.ConnectSystemBus()
	if err == nil {
		err = conn.AddMatchSignal(dbus.WithMatchSender(dest), dbus.WithMatchObjectPath(managerPath),
			dbus.WithMatchInterface(manager), dbus.WithMatchMember("JobRemoved"))
		if err == nil {
			err = conn.AddMatchSignal(dbus.WithMatchSender(dest), dbus.WithMatchObjectPath(managerPath),
				dbus.WithMatchInterface(manager), dbus.WithMatchMember("UnitRemoved"))
		}
		if err == nil {
			return conn, nil
		}
		conn.Close()
	}
	private, perr := dbus.Dial(privateSocket)
	if perr == nil {
		if perr = private.Auth([]dbus.Auth{dbus.AuthExternal(strconv.Itoa(os.Getuid()))}); perr == nil {
			return private, nil
		}
		private.Close()
	}
	return nil, fmt.Errorf("scope: connect to systemd: %w", errors.Join(err, perr))
}

// dispatch hands systemd's signals to the Places waiting on their units,
// without blocking, until the connection closes; then it fails them all.
func (m *Manager) dispatch(conn *dbus.Conn, signals <-chan *dbus.Signal) {
	for s := range signals {
		name, ev, ok := decode(s)
		if !ok {
			continue
		}
		m.mu.Lock()
		for _, ch := range m.waiters[name] {
			select {
			case ch <- ev:
			default: // a waiter that has not read 16 signals of its unit learns of it at its timeout
			}
		}
		m.mu.Unlock()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.conn == conn {
		m.conn = nil
	}
	for _, w := range m.waiters {
		for _, ch := range w {
			select {
			case ch <- event{lost: true}:
			default:
			}
		}
	}
}

// decode reads a JobRemoved (id, job, unit, result) or UnitRemoved (unit,
// path) signal of the manager.
func decode(s *dbus.Signal) (string, event, bool) {
	if s.Path != managerPath {
		return "", event{}, false
	}
	switch s.Name {
	case manager + ".JobRemoved":
		if len(s.Body) == 4 {
			job, _ := s.Body[1].(dbus.ObjectPath)
			unit, _ := s.Body[2].(string)
			result, _ := s.Body[3].(string)
			return unit, event{job: job, result: result}, true
		}
	case manager + ".UnitRemoved":
		if len(s.Body) == 2 {
			unit, _ := s.Body[0].(string)
			return unit, event{removed: true}, true
		}
	}
	return "", event{}, false
}

// drop forgets a connection a call failed on for a reason other than
// systemd's answer, so that the next Place connects afresh.
func (m *Manager) drop(conn *dbus.Conn, err error) {
	if answered(err) {
		return // systemd answered: the connection is fine
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.conn == conn {
		m.conn.Close()
		m.conn = nil
	}
}

// answered reports whether err is systemd's answer (a D-Bus error reply).
func answered(err error) bool { return errorName(err) != "" }

func isError(err error, name string) bool { return errorName(err) == name }

// errorName is the name of the D-Bus error reply err is, "" for another
// error.
func errorName(err error) string {
	var v dbus.Error
	if errors.As(err, &v) {
		return v.Name
	}
	var p *dbus.Error
	if errors.As(err, &p) && p != nil {
		return p.Name
	}
	return ""
}

// ownService is the service unit the calling process runs in (the last
// element of its cgroup path that names one, e.g. vigil.service for
// system.slice/vigil.service/supervisor), "" when it runs in none.
func ownService() string {
	dir, err := cgroup.PathOf(os.Getpid())
	if err != nil {
		return ""
	}
	parts := strings.Split(dir, "/")
	for i := len(parts) - 1; i >= 0; i-- {
		if strings.HasSuffix(parts[i], ".service") {
			return parts[i]
		}
	}
	return ""
}
