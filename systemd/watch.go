package systemd

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/godbus/dbus/v5"
)

// The change watcher behind Changes: systemd's own signals over D-Bus (a
// unit's PropertiesChanged, sent the moment its state changes), or, where
// the bus cannot be reached or Config.Watch is "poll", the poll of
// systemctl show every Config.Poll.

// watchChanges notifies at each change of one of the driver's units until
// ctx is done. It blocks.
func (d *Driver) watchChanges(ctx context.Context) {
	if d.cfg.Watch != "poll" {
		err := watchBus(ctx, d.ours, d.notify)
		if ctx.Err() != nil {
			return
		}
		d.log.Warn("no D-Bus change signals from systemd: polling systemctl show instead", "every", d.cfg.Poll, "error", err)
	}
	d.watch(ctx)
}

// ours reports whether unit is one of the driver's services.
func (d *Driver) ours(unit string) bool {
	for _, s := range d.cur.Load().services {
		if s.unit == unit {
			return true
		}
	}
	return false
}

// unitPaths is the object-path namespace of systemd's units.
const unitPaths = "/org/freedesktop/systemd1/unit"

// watchBus subscribes to systemd's unit signals on the system bus and calls
// changed for each PropertiesChanged of a unit that ours accepts, until ctx
// is done (nil) or the bus fails (its error). It blocks; changed is called
// from its goroutine only.
func watchBus(ctx context.Context, ours func(unit string) bool, changed func()) error {
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
				changed()
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
