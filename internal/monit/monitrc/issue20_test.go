package monitrc

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestErrorLines: each error is reported at the line of the statement that
// causes it: an unknown dependency at its depends on line (also when the
// list goes on to a second line), a string that runs past its line where
// it starts, not where the file (or the next quote) ends.
func TestErrorLines(t *testing.T) {
	root := t.TempDir()
	f := filepath.Join(root, "jobs", "a", "monit")
	write(t, f, "check process a with pidfile /p\n"+ // 1
		"  start program \"/bin/true\"\n"+ // 2
		"  group vcap\n"+ // 3
		"  depends on b,\n"+ // 4
		"    nope\n"+ // 5
		"check process b with pidfile /q\n") // 6
	c, _, err := Load(root)
	if err != nil {
		t.Fatal(err)
	}
	want(t, problems(c), f+":5: depend service 'nope' is not defined in the control file (needed by a)")

	for _, tc := range []struct{ src, want string }{
		{"check process x pidfile /p\n  start program \"/bin/x\n  stop program \"/bin/y\"\n  group vcap\n",
			"f:2: unterminated string"},
		{"check process x pidfile /p\n  group vcap\n  start program \"/bin/x\n", "f:3: unterminated string"},
		{"check process x pidfile '/p\n  start program \"/bin/x\"\n", "f:1: unterminated string"},
	} {
		if _, err := Parse("f", []byte(tc.src)); err == nil || err.Error() != tc.want {
			t.Errorf("%q: got %v, want %s", tc.src, err, tc.want)
		}
	}
}

// TestHostAddressAsWritten: a check host's connection tests go to its
// address as the file writes it; a process's default to localhost.
func TestHostAddressAsWritten(t *testing.T) {
	f, err := Parse("f", []byte("check host lb with address 127.0.0.1\n  if failed port 80 protocol http then alert\n"+
		"check process p with pidfile /p\n  if failed port 81 then alert\n"))
	if err != nil {
		t.Fatal(err)
	}
	want(t, f.Services[0].Tests[0].Host, "127.0.0.1")
	want(t, f.Services[0].Tests[0].Text, "failed 127.0.0.1:80")
	want(t, f.Services[1].Tests[0].Host, "localhost")
}

// TestConflicts: the file that introduces a service name conflict is
// refused, all of it, with its own file and line; the definition in force
// stays, whichever file comes first in monit's order.
func TestConflicts(t *testing.T) {
	root := t.TempDir()
	job := func(n string) string { return filepath.Join(root, "monit", "job", n) }
	// The agent's numbering: 0000 is parsed last.
	write(t, job("0000_old.monitrc"), proc("web")+proc("old_helper"))
	c, _, err := Load(root)
	if err != nil || problems(c) != "" {
		t.Fatal(err, problems(c))
	}
	write(t, job("0001_new.monitrc"), proc("WEB")+proc("new_helper"))
	fresh, _, err := Load(root)
	if err != nil {
		t.Fatal(err)
	}
	// Without history monit's order decides: 0001 is parsed first.
	want(t, names(fresh), "WEB,new_helper")

	for _, since := range []Since{{Previous: c}, {Owners: map[string]string{"web": job("0000_old.monitrc")}}} {
		got, _, err := LoadSince(root, since)
		if err != nil {
			t.Fatal(err)
		}
		want(t, names(got), "web,old_helper")
		want(t, problems(got), job("0001_new.monitrc")+":1: service name conflict, WEB already defined at "+
			job("0000_old.monitrc")+":1: none of this file's services is loaded")
	}

	// The agent numbers the files again at each deploy: 0000_old became
	// 0002_old, and is still the file that owns web.
	write(t, job("0002_old.monitrc"), proc("web")+proc("old_helper"))
	if err := removeFile(job("0000_old.monitrc")); err != nil {
		t.Fatal(err)
	}
	got, _, err := LoadSince(root, Since{Previous: c})
	if err != nil {
		t.Fatal(err)
	}
	want(t, names(got), "web,old_helper")
	if !strings.HasPrefix(problems(got), job("0001_new.monitrc")+":1: service name conflict, WEB") {
		t.Errorf("problems: %s", problems(got))
	}
}

// TestBrokenFileKeepsPrevious: a file in force whose new version does not
// load keeps its previous services, as a bpm.yml does.
func TestBrokenFileKeepsPrevious(t *testing.T) {
	root := t.TempDir()
	f := filepath.Join(root, "monit", "job", "0000_a.monitrc")
	write(t, f, proc("a"))
	prev, _, err := Load(root)
	if err != nil {
		t.Fatal(err)
	}
	write(t, f, proc("a")+"  bogus\n")
	got, _, err := LoadSince(root, Since{Previous: prev})
	if err != nil {
		t.Fatal(err)
	}
	want(t, names(got), "a")
	want(t, problems(got), f+":6: syntax error: unexpected \"bogus\" in check a (known statements: pidfile, path, address, start, stop, group, depends, mode, every, alert, noalert, if, ignore)\n"+
		f+": the new version does not load: its previous services stay in force")
	if fresh, _, _ := Load(root); names(fresh) != "" {
		t.Errorf("without history the broken file has services %s", names(fresh))
	}
}

// TestFileAndSystemTests: the tests of check file, directory, fifo,
// filesystem and system, with monit's units, rates and recovery actions.
func TestFileAndSystemTests(t *testing.T) {
	f, err := Parse("f", []byte(`check file conf with path /etc/conf
  if failed permission 0640 then alert
  if failed uid root then alert
  if failed gid 0 for 2 cycles then alert
  if timestamp > 5 minutes then exec "/bin/touch /etc/conf"
  if changed timestamp then alert
  if size > 10 kB then alert else if succeeded 2 cycles then exec "/bin/ok"
  if changed size then alert
  if failed sha1 checksum expect 0123456789abcdef0123456789abcdef01234567 then unmonitor
  if changed checksum then alert
  if match "^ERROR" then alert
  ignore match "^ERROR ok"
  if not exist then alert
  every 2 cycles
check system box
  if loadavg (5min) > 4 for 3 cycles then alert
  if cpu usage (user) > 90% then alert
  if memory usage > 80 % then alert
  if swap > 1 GB then alert
check filesystem data with path /var/vcap/data
  if space usage > 90% then alert
  if inodes > 1000 then alert
  if changed fsflags then alert
`))
	if err != nil {
		t.Fatal(err)
	}
	ts := f.Services[0].Tests
	want(t, len(ts), 12)
	want(t, ts[0].Perm, uint32(0o640))
	want(t, [2]string{ts[1].Owner, ts[2].Owner}, [2]string{"root", "0"})
	want(t, [2]int{ts[2].Failures, ts[2].Cycles}, [2]int{2, 2})
	want(t, [3]any{ts[3].Kind, ts[3].Operator, ts[3].Limit}, [3]any{TestTimestamp, ">", 300.0})
	want(t, ts[4].Changed, true)
	want(t, [2]any{ts[5].Limit, ts[5].Recovery.Exec.Argv}, [2]any{10240.0, []string{"/bin/ok"}})
	want(t, [2]int{ts[5].RecoveryFailures, ts[5].RecoveryCycles}, [2]int{2, 2})
	want(t, [2]string{ts[7].Hash, ts[7].Sum}, [2]string{"sha1", "0123456789abcdef0123456789abcdef01234567"})
	want(t, ts[8].Changed, true)
	want(t, [3]any{ts[9].Kind, ts[9].Pattern, ts[10].Ignore}, [3]any{TestMatch, "^ERROR", true})
	want(t, [2]any{ts[11].Kind, ts[11].Action.Kind}, [2]any{TestExist, ActAlert})
	want(t, ts[11].Recovery.Kind, ActAlert)
	want(t, f.Services[0].Every, 2)
	sys := f.Services[1].Tests
	want(t, [3]any{sys[0].Resource, sys[0].Limit, sys[0].Failures}, [3]any{"loadavg5", 4.0, 3})
	want(t, [2]any{sys[1].Resource, sys[1].Percent}, [2]any{"cpuuser", true})
	want(t, [2]any{sys[2].Resource, sys[2].Limit}, [2]any{"memory", 80.0})
	want(t, [2]any{sys[3].Resource, sys[3].Limit}, [2]any{"swap", 1048576.0})
	fs := f.Services[2].Tests
	want(t, [3]any{fs[0].Kind, fs[0].Percent, fs[1].Kind}, [3]any{TestSpace, true, TestInode})
}

// TestTestsByType: a test the grammar does not allow in a check of that
// type is an error at its line.
func TestTestsByType(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"check host h address 10.0.0.1\n if failed permission 644 then alert\n",
			"f:2: syntax error: a permission test is not allowed in a check remote host"},
		{"check system s\n if failed port 80 then alert\n",
			"f:2: syntax error: a connection test is not allowed in a check system"},
		{"check process p pidfile /p\n if swap > 10% then alert\n",
			"f:2: syntax error: resource swap is not allowed in a check process"},
		{"check file f path /f\n if changed size then alert else if succeeded then alert\n",
			"f:2: syntax error: a size test has no else branch"},
		{"check process p pidfile /p\n if cpu > 50 then alert\n", "f:2: a cpu test takes a percentage"},
	} {
		if _, err := Parse("f", []byte(tc.src)); err == nil || err.Error() != tc.want {
			t.Errorf("%q: got %v, want %s", tc.src, err, tc.want)
		}
	}
}

// TestDefaults: the connection timeout and the every and rate defaults.
func TestDefaults(t *testing.T) {
	f, err := Parse("f", []byte("check process p pidfile /p\n if failed port 80 then restart\n"))
	if err != nil {
		t.Fatal(err)
	}
	ts := f.Services[0].Tests[0]
	want(t, [3]any{ts.Timeout, ts.Failures, ts.Recovery.Kind}, [3]any{5 * time.Second, 0, ActAlert})
}
