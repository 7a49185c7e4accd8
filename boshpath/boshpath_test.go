package boshpath

import "testing"

func TestInside(t *testing.T) {
	l, _ := New("/srv/root")
	for in, want := range map[string]string{
		"/srv/root":                  "/var/vcap",
		"/srv/root/jobs/web":         "/var/vcap/jobs/web",
		"/srv/root/sys/log/web/x":    "/var/vcap/sys/log/web/x",
		"/srv/rootless/jobs":         "/srv/rootless/jobs",
		"/bin/sh":                    "/bin/sh",
		"/srv/root/../elsewhere/foo": "/srv/root/../elsewhere/foo",
	} {
		if got := l.Inside(in); got != want {
			t.Errorf("Inside(%q) = %q, want %q", in, got, want)
		}
	}
	d, _ := New(DefaultRoot)
	if got := d.Inside("/var/vcap/jobs/web"); got != "/var/vcap/jobs/web" {
		t.Errorf("on the default root: %q", got)
	}
}
