package systemd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"

	"github.com/godbus/dbus/v5"
)

// BusWatcher is the Watcher that follows systemd's own signals on the
// system bus: a unit's PropertiesChanged, sent the moment its state
// changes. Where the bus cannot be reached (or fails), it says so in Log
// and hands over to Fallback (the poll).
type BusWatcher struct {
	Fallback Watcher
	Log      *slog.Logger
}

// Watch implements Watcher.
func (w BusWatcher) Watch(ctx context.Context, units func() []string, changed func()) {
	err := watchBus(ctx, func(u string) bool { return slices.Contains(units(), u) }, changed)
	if ctx.Err() != nil {
		return
	}
	w.Log.Warn("no D-Bus signals from systemd: polling systemctl instead", "error", err)
	w.Fallback.Watch(ctx, units, changed)
}

// unitPaths is the object-path namespace of systemd's units.
const unitPaths = "/org/freedesktop/systemd1/unit"

// watchBus subscribes to systemd's unit signals on the system bus and calls
// changed after the PropertiesChanged of a unit that ours accepts, until
// ctx is done (nil) or the bus fails (its error). A state change sends a
// burst of signals: those that come while changed runs make one more call,
// not one each. It blocks, and returns once changed has returned; changed
// runs on one goroutine of its own.
func watchBus(ctx context.Context, ours func(unit string) bool, changed func()) error {
	kick := make(chan struct{}, 1)
	lctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-lctx.Done():
				return
			case <-kick:
				changed()
			}
		}
	}()
	defer func() { cancel(); <-done }()
	conn, err := dbus.ConnectSystemBus(dbus.WithContext(ctx))
	if err != nil {
		return fmt.Errorf("connect to the system bus: %w", err)
	}
	defer conn.Close()
	// Only systemd's own signals: the bus routes none that another client
	// sends under its paths (a forged one would cost a status read).
	if err := conn.AddMatchSignalContext(ctx, dbus.WithMatchSender("org.freedesktop.systemd1"),
		dbus.WithMatchInterface("org.freedesktop.DBus.Properties"),
		dbus.WithMatchMember("PropertiesChanged"), dbus.WithMatchPathNamespace(unitPaths)); err != nil {
		return fmt.Errorf("match systemd's signals: %w", err)
	}
	signals := make(chan *dbus.Signal, 256)
	conn.Signal(signals)
	// systemd sends its unit signals only while a client has subscribed.
	manager := conn.Object("org.freedesktop.systemd1", "/org/freedesktop/systemd1")
	if err := manager.CallWithContext(ctx, "org.freedesktop.systemd1.Manager.Subscribe", 0).Err; err != nil {
		return fmt.Errorf("subscribe to systemd: %w", err)
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case s, ok := <-signals:
			if !ok {
				return errors.New("the system bus connection closed")
			}
			if unit, ok := unitOfPath(s.Path); ok && ours(unit) {
				select {
				case kick <- struct{}{}:
				default: // a call is due already
				}
			}
		}
	}
}

// unitOfPath decodes a unit's object path (systemd escapes each byte
// outside [A-Za-z0-9] as _XX): .../unit/vigil_2dweb_2eservice is
// vigil-web.service.
func unitOfPath(p dbus.ObjectPath) (string, bool) {
	enc, ok := strings.CutPrefix(string(p), unitPaths+"/")
	if !ok || strings.Contains(enc, "/") {
		return "", false
	}
	var b strings.Builder
	for i := 0; i < len(enc); i++ {
		if enc[i] != '_' {
			b.WriteByte(enc[i])
			continue
		}
		if i+2 >= len(enc) {
			return "", false
		}
		n, err := strconv.ParseUint(enc[i+1:i+3], 16, 8)
		if err != nil {
			return "", false
		}
		b.WriteByte(byte(n))
		i += 2
	}
	return b.String(), true
}
