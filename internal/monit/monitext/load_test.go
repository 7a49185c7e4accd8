package monitext

import "testing"

// TestFileJob: the job of a control file is its directory's name for
// ROOT/jobs/JOB/monit and *.monit, else its name without .monitrc and the
// agent's NNNN_ prefix (four digits and an underscore, nothing else).
func TestFileJob(t *testing.T) {
	for path, want := range map[string]string{
		"/var/vcap/jobs/web/monit":                   "web",
		"/var/vcap/jobs/web/x.monit":                 "web",
		"/var/vcap/monit/job/0000_web.monitrc":       "web",
		"/var/vcap/monit/job/0012_web_proxy.monitrc": "web_proxy",
		"/var/vcap/monit/job/web.monitrc":            "web",
		"/var/vcap/monit/job/000_web.monitrc":        "000_web",
		"/var/vcap/monit/job/00a0_web.monitrc":       "00a0_web",
		"/var/vcap/monit/job/0000_.monitrc":          "",
		"/var/vcap/monit/job/0000.monitrc":           "0000",
		"/var/vcap/monit/job/12345_web.monitrc":      "12345_web",
	} {
		if got := fileJob(path); got != want {
			t.Errorf("fileJob(%q) = %q, want %q", path, got, want)
		}
	}
}
