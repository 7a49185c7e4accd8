package systemd

import (
	"testing"

	"github.com/godbus/dbus/v5"
)

func TestUnitOfPath(t *testing.T) {
	for path, want := range map[string]string{
		"/org/freedesktop/systemd1/unit/vigil_2dweb_2dserver_2eservice":                "vigil-web-server.service",
		"/org/freedesktop/systemd1/unit/vigil_2dcloud_5cx2dcontroller_2dapi_2eservice": `vigil-cloud\x2dcontroller-api.service`,
		"/org/freedesktop/systemd1/unit/dbus_2eservice":                                "dbus.service",
	} {
		if got, ok := unitOfPath(dbusPath(path)); !ok || got != want {
			t.Errorf("%s: %q %v, want %q", path, got, ok, want)
		}
	}
	for _, bad := range []string{"/org/freedesktop/systemd1", "/org/freedesktop/systemd1/unit/a/b", "/org/freedesktop/systemd1/unit/x_2"} {
		if got, ok := unitOfPath(dbusPath(bad)); ok {
			t.Errorf("%s: decoded as %q", bad, got)
		}
	}
}

func dbusPath(s string) dbus.ObjectPath { return dbus.ObjectPath(s) }
