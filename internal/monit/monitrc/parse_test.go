package monitrc

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func parseCorpus(t *testing.T, name string) *File {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", "corpus", name))
	if err != nil {
		t.Fatal(err)
	}
	f, err := Parse(name, src)
	if err != nil {
		t.Fatalf("parse %s: %v", name, err)
	}
	return f
}

func TestCorpus(t *testing.T) {
	tests := []struct {
		file  string
		check func(t *testing.T, f *File)
	}{
		{"empty.monitrc", func(t *testing.T, f *File) { want(t, len(f.Services), 0) }},
		{"comment_only.monitrc", func(t *testing.T, f *File) { want(t, len(f.Services), 0) }},
		{"bpm_shim.monitrc", func(t *testing.T, f *File) {
			s := f.Services[0]
			want(t, s.Name, "nats-wrapper")
			want(t, s.Type, TypeProcess)
			want(t, s.PidFile, "/var/vcap/sys/run/bpm/nats/nats-wrapper.pid")
			want(t, s.Start.Argv, []string{"/var/vcap/jobs/bpm/bin/bpm", "start", "nats", "-p", "nats-wrapper"})
			want(t, s.Start.Timeout, DefaultExecTimeout)
			want(t, s.Groups, []string{"vcap"})
			want(t, len(s.Tests), 3)
			want(t, s.Tests[0].Kind, TestResource)
			want(t, s.Tests[0].Limit, 500.0*1024)
			want(t, [2]int{s.Tests[0].Failures, s.Tests[0].Cycles}, [2]int{2, 2})
			want(t, s.Tests[1].Action.Kind, ActRestart)
			want(t, s.Tests[2].Kind, TestConnection)
			want(t, s.Tests[2].Host, "10.0.0.5")
			want(t, s.Tests[2].Port, 4222)
			want(t, s.Tests[2].Type, "tcp")
		}},
		{"ctl_daemonize.monitrc", func(t *testing.T, f *File) {
			want(t, len(f.Services), 2)
			st := f.Services[0].Start
			want(t, st.UID, "vcap")
			want(t, st.GID, "vcap")
			want(t, st.Timeout, 120*time.Second)
			want(t, f.Services[1].DependsOn, []string{"postgres"})
			want(t, f.Services[1].Line, 8)
		}},
		{"health_http.monitrc", func(t *testing.T, f *File) {
			ts := f.Services[0].Tests[0]
			want(t, ts.Protocol, "http")
			want(t, ts.Request, "/log-level")
			want(t, ts.Timeout, 10*time.Second)
			want(t, [2]int{ts.Failures, ts.Cycles}, [2]int{6, 6})
			want(t, ts.Action.Kind, ActRestart)
			want(t, ts.Line, 6)
		}},
		{"restart_limit.monitrc", func(t *testing.T, f *File) {
			s := f.Services[1]
			want(t, s.Start.Timeout, 65*time.Second)
			ts := s.Tests[0]
			want(t, ts.Kind, TestRestarts)
			want(t, [2]int{ts.Failures, ts.Cycles}, [2]int{1, 1})
			want(t, ts.Action.Exec.Argv, []string{"/var/vcap/packages/routing-healthchecker/bin/restart-monit-job",
				"gorouter", "/var/vcap/data/x y/counter"})
		}},
		{"check_file_host.monitrc", func(t *testing.T, f *File) {
			want(t, f.Services[0].Type, TypeFile)
			want(t, f.Services[0].Path, "/etc/cron.d/nfs_mounter_crontab")
			h := f.Services[1]
			want(t, h.Type, TypeHost)
			want(t, h.Address, "10.0.0.7")
			want(t, [2]int{h.Tests[0].Failures, h.Tests[0].Cycles}, [2]int{3, 5})
			want(t, h.Groups, []string{"vcap"})
		}},
		{"unixsocket_mem_pct.monitrc", func(t *testing.T, f *File) {
			s := f.Services[0]
			want(t, s.Stop.Timeout, 150*time.Second)
			want(t, s.Tests[0].Socket, "/var/vcap/data/cloud_controller_ng/cloud_controller.sock")
			want(t, s.Tests[0].Timeout, 20*time.Second)
			want(t, s.Tests[1].Percent, true)
			want(t, s.Tests[1].Limit, 75.0)
			want(t, s.Tests[2].Action.Kind, ActTimeout)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) { tc.check(t, parseCorpus(t, tc.file)) })
	}
}

func want[T any](t *testing.T, got, exp T) {
	t.Helper()
	if !reflect.DeepEqual(got, exp) {
		t.Errorf("got %#v, want %#v", got, exp)
	}
}

func TestNoiseAndCase(t *testing.T) {
	forms := []string{
		`check process x with pidfile /p start program "/bin/a b" stop program "/bin/c"`,
		`CHECK PROCESS x PIDFILE /p START "/bin/a b" STOP "/bin/c"`,
		`check process x with pidfile = /p start program = "/bin/a b" stop = "/bin/c"`,
		"check process x\n  with pidfile /p\n  start program \"/bin/a 'b'\"\n  stop program \"/bin/c\"\n",
		`check x with pidfile /p start "/bin/a b" stop "/bin/c"`, // process is the default type
		`check process x path /p start "/bin/a b" stop "/bin/c"`,
	}
	for _, src := range forms {
		f, err := Parse("f", []byte(src))
		if err != nil {
			t.Fatalf("%q: %v", src, err)
		}
		s := f.Services[0]
		want(t, s.PidFile, "/p")
		want(t, s.Start.Argv, []string{"/bin/a", "b"})
		want(t, s.Stop.Argv, []string{"/bin/c"})
	}
}

func TestStemcellSettings(t *testing.T) {
	src := `set daemon 10
set logfile /var/vcap/monit/monit.log
set httpd port 2822 and use address 127.0.0.1
  allow cleartext /var/vcap/monit/monit.user
set alert agent@local
set mailserver localhost port 2825 with timeout 15 seconds
set eventqueue basedir /var/vcap/monit/events slots 5000
set mail-format {
  from: monit@localhost
  subject: Monit Alert
  message: Service: $SERVICE
}
include /var/vcap/monit/*.monitrc
include /var/vcap/monit/job/*.monitrc
`
	f, err := Parse("monitrc", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want(t, f.Cycle, 10*time.Second)
	want(t, *f.HTTPD, HTTPD{Port: 2822, Address: "127.0.0.1", Cleartext: []string{"/var/vcap/monit/monit.user"}})
	want(t, f.Alerts, []string{"agent@local"})
	want(t, *f.MailServer, MailServer{Host: "localhost", Port: 2825, Timeout: 15 * time.Second})
	want(t, f.Includes, []string{"/var/vcap/monit/*.monitrc", "/var/vcap/monit/job/*.monitrc"})
	f, err = Parse("m", []byte("set httpd port 2812 allow admin:secret allow localhost"))
	if err != nil {
		t.Fatal(err)
	}
	want(t, f.HTTPD.Users, []Credential{{"admin", "secret"}})
	want(t, f.HTTPD.Allow, []string{"localhost"})
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ src, want string }{
		{"check process x\n  pidfile /p\n  start program /bin/x\n", "f:3: syntax error: unexpected \"/bin/x\", expected a quoted program"},
		{"check process x pidfile /p\n\n  bogus 1\n", "f:3: syntax error: unexpected \"bogus\" in check x (known statements: pidfile, path, address, start, stop, group, depends, mode, every, alert, noalert, if, ignore)"},
		{"check widget x\n", "f:1: syntax error: unknown service type \"widget\" (known types: device, directory, fifo, file, filesystem, host, process, system)"},
		// Did you mean: a keyword one slip away is named.
		{"check process x pidfile /p\n stop progam \"/bin/x\"\n", "f:2: syntax error: unexpected \"progam\", expected a quoted program (did you mean \"program\"?)"},
		{"check process x pidfile /p\n stpo program \"/bin/x\"\n", "f:2: syntax error: unexpected \"stpo\" in check x (did you mean \"stop\"?)"},
		{"check proces x pidfile /p\n", "f:1: syntax error: unknown service type \"proces\" (did you mean \"process\"?)"},
		{"set deamon 10\n", "f:1: syntax error: unknown setting \"deamon\" (did you mean \"daemon\"?)"},
		{"chek process x pidfile /p\n", "f:1: syntax error: unexpected \"chek\", expected set, include or check (did you mean \"check\"?)"},
		{"check process x pidfile /p\n if totalmen > 1 MB then alert\n", "f:2: syntax error: unexpected \"totalmen\", expected a test after if (did you mean \"totalmem\"?)"},
		{"check process x pidfile /p\n if 1 restarts 2 cycles then restrat\n", "f:2: syntax error: unexpected \"restrat\", expected alert or restart or start or stop or unmonitor or exec or execute or timeout (did you mean \"restart\"?)"},
		{"check process x pidfile /p\n mode activ\n", "f:2: syntax error: unexpected \"activ\", expected active or passive or manual (did you mean \"active\"?)"},
		{"set daemon\n", "f:1: syntax error: unexpected end of file, expected a number of seconds after set daemon"},
		{"start program \"x\"\n", "f:1: syntax error: unexpected \"start\", expected set, include or check"},
		{"check process x pidfile /p\n if failed port 99999 then alert\n", "f:2: port 99999 out of range"},
		{"set mailserver localhost port 0\n", "f:1: port 0 out of range"},
		{"check process x pidfile /p\n if failed host h then alert\n", "f:2: connection test needs a port or a unix socket"},
		{"check process x pidfile /p\n start \"/bin/x\n", "f:2: unterminated string"},
		{"check process x pidfile /p\n start \"/bin/'x\"\n", "f:2: unterminated single quote in \"/bin/'x\""},
		{"check process x pidfile /p\n if 1 restarts 2 cycles then bogus\n", "f:2: syntax error: unexpected \"bogus\", expected alert or restart or start or stop or unmonitor or exec or execute or timeout"},
		{"check process x pidfile /p\n if failed port 80 3 2 cycles then alert\n", "f:2: 3 times within 2 cycles is impossible"},
		{"check process x pidfile /p\n if totalmem > lots then alert\n", "f:2: syntax error: expected a number, got \"lots\""},
	}
	for _, tc := range tests {
		_, err := Parse("f", []byte(tc.src))
		if err == nil || err.Error() != tc.want {
			t.Errorf("%q:\n got %v\nwant %s", tc.src, err, tc.want)
		}
	}
}

func TestSplitProgram(t *testing.T) {
	argv, err := splitProgram("  /bin/sh  -c 'echo a  b' x'y z'w ")
	if err != nil {
		t.Fatal(err)
	}
	want(t, argv, []string{"/bin/sh", "-c", "echo a  b", "xy zw"})
	if _, err := splitProgram("   "); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("blank program: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	for _, name := range []string{"bpm_shim.monitrc", "ctl_daemonize.monitrc", "health_http.monitrc",
		"restart_limit.monitrc", "check_file_host.monitrc", "unixsocket_mem_pct.monitrc"} {
		src, err := os.ReadFile(filepath.Join("testdata", "corpus", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(src)
	}
	f.Add([]byte("set httpd port 2822 allow a:b\nset mail-format { x }\ninclude /x/*"))
	f.Add([]byte("check process x pidfile /p if failed port 1 protocol http request \"/\" 2 3 cycles then exec \"/bin/x 'a\""))
	f.Fuzz(func(t *testing.T, src []byte) {
		file, err := Parse("f", src)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f:") {
				t.Fatalf("error without file: %v", err)
			}
			return
		}
		for _, s := range file.Services {
			if s.Name == "" {
				t.Fatal("service without a name")
			}
			for _, p := range []*Program{s.Start, s.Stop} {
				if p != nil && len(p.Argv) == 0 {
					t.Fatal("program without argv")
				}
			}
		}
	})
}
