package monitrc

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, path, src string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
}

func names(c *Config) string {
	var out []string
	for _, s := range c.Services {
		out = append(out, s.Name)
	}
	return strings.Join(out, ",")
}

func problems(c *Config) string {
	var out []string
	for _, p := range c.Problems {
		out = append(out, p.Error())
	}
	return strings.Join(out, "\n")
}

func proc(name string, extra ...string) string {
	return "check process " + name + " with pidfile /var/vcap/sys/run/" + name + ".pid\n" +
		"  start program \"/bin/true\"\n  stop program \"/bin/true\"\n  group vcap\n" + strings.Join(extra, "\n") + "\n"
}

func TestLoadStemcell(t *testing.T) {
	root := t.TempDir()
	p := Paths{Root: root}
	write(t, p.Monitrc(), "set daemon 10\nset httpd port 2822 and use address 127.0.0.1\n"+
		"  allow cleartext /var/vcap/monit/monit.user\ninclude /var/vcap/monit/*.monitrc\ninclude /var/vcap/monit/job/*.monitrc\n")
	write(t, filepath.Join(root, "monit", "empty.monitrc"), "")
	// The agent numbers jobs in reverse: 0000 is the last manifest job.
	write(t, filepath.Join(root, "monit", "job", "0000_web.monitrc"), proc("web", "  depends on db"))
	write(t, filepath.Join(root, "monit", "job", "0001_broken.monitrc"), proc("broken")+"  nonsense here\n")
	write(t, filepath.Join(root, "monit", "job", "0002_db.monitrc"), proc("db")+proc("db_janitor", "depends on db"))
	c, found, err := Load(root)
	if err != nil || !found {
		t.Fatal(found, err)
	}
	want(t, names(c), "db,db_janitor,web")
	want(t, problems(c), filepath.Join(root, "monit", "job", "0001_broken.monitrc")+":6: syntax error: unexpected \"nonsense\" in check broken (known statements: pidfile, path, address, start, stop, group, depends, mode, every, alert, noalert, if, ignore)")
	want(t, c.HTTPD.Cleartext, []string{filepath.Join(root, "monit", "monit.user")})
	want(t, c.Services[0].PidFile, filepath.Join(root, "sys", "run", "db.pid"))
	want(t, c.File, p.Monitrc())
}

// TestLoadMapsPrograms: under a root other than /var/vcap, start, stop and
// exec programs written for the stemcell run the root's own files.
func TestLoadMapsPrograms(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "monit", "job", "0000_ctl.monitrc"), "check process ctl with pidfile /var/vcap/sys/run/ctl.pid\n"+
		"  start program \"/var/vcap/jobs/ctl/bin/ctl start /var/vcap/data/ctl\" with timeout 10 seconds\n"+
		"  stop program \"/bin/sh -c '/var/vcap/jobs/ctl/bin/ctl stop'\"\n"+
		"  if 2 restarts within 3 cycles then exec \"/var/vcap/packages/hc/bin/restart ctl\"\n  group vcap\n")
	c, found, err := Load(root)
	if err != nil || !found || len(c.Services) != 1 {
		t.Fatal(found, err, problems(c))
	}
	s := c.Services[0]
	want(t, s.Start.Argv, []string{filepath.Join(root, "jobs/ctl/bin/ctl"), "start", filepath.Join(root, "data/ctl")})
	want(t, s.Stop.Argv, []string{"/bin/sh", "-c", "/var/vcap/jobs/ctl/bin/ctl stop"})
	want(t, s.Tests[0].Action.Exec.Argv, []string{filepath.Join(root, "packages/hc/bin/restart"), "ctl"})
}

func TestLoadDependencyErrors(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "jobs", "a", "monit"), proc("a", "depends on nope"))
	write(t, filepath.Join(root, "jobs", "b", "monit"), proc("b", "depends on c")+proc("c", "depends on b"))
	write(t, filepath.Join(root, "jobs", "d", "monit"), proc("d")+proc("D"))
	write(t, filepath.Join(root, "jobs", "e", "monit"), proc("e", "depends on a"))
	write(t, filepath.Join(root, "jobs", "f", "monit"), proc("f", "depends on f"))
	c, found, err := Load(root)
	if err != nil || !found {
		t.Fatal(found, err)
	}
	want(t, names(c), "")
	j := func(n string) string { return filepath.Join(root, "jobs", n, "monit") }
	want(t, problems(c), strings.Join([]string{
		j("d") + ":6: service name conflict, D already defined at " + j("d") + ":1: none of this file's services is loaded",
		j("a") + ":5: depend service 'nope' is not defined in the control file (needed by a)",
		j("e") + ":5: depend service 'a' is not defined in the control file (needed by e)",
		j("b") + ":1: found a depend loop in the control file involving service 'b'",
		j("b") + ":6: found a depend loop in the control file involving service 'c'",
		j("f") + ":1: found a depend loop in the control file involving service 'f'",
	}, "\n"))
	// The default httpd of a stemcell.
	want(t, *c.HTTPD, HTTPD{Port: 2822, Address: "127.0.0.1", Cleartext: []string{filepath.Join(root, "monit", "monit.user")}})
}

func TestLoadNothing(t *testing.T) {
	c, found, err := Load(t.TempDir())
	if c != nil || found || err != nil {
		t.Fatal(c, found, err)
	}
}

func TestOrderAndDependants(t *testing.T) {
	f, err := Parse("f", []byte(proc("web", "depends on api, cache")+proc("api", "depends on db")+proc("db")+proc("cache")))
	if err != nil {
		t.Fatal(err)
	}
	c := &Config{Services: f.Services}
	var order []string
	for _, s := range c.Order() {
		order = append(order, s.Name)
	}
	want(t, strings.Join(order, ","), "db,cache,api,web") // monit's passes: each takes what is ready
	want(t, len(c.Dependants("API")), 1)
}

func removeFile(path string) error { return os.Remove(path) }
