package boshpath

import "testing"

func TestInside(t *testing.T) {
	l, _ := New("/tmp/root")
	for in, want := range map[string]string{
		"/tmp/root":                  "/var/vcap",
		"/tmp/root/jobs/web":         "/var/vcap/jobs/web",
		"/tmp/root/sys/log/web/x":    "/var/vcap/sys/log/web/x",
		"/tmp/rootless/jobs":         "/tmp/rootless/jobs",
		"/bin/sh":                    "/bin/sh",
		"/tmp/root/../elsewhere/foo": "/tmp/root/../elsewhere/foo",
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
