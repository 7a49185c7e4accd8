package job

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// proc wraps process fields in a bpm.yml whose process starts on line 2.
func proc(fields string) string {
	return "processes:\n- name: web\n  executable: /bin/web\n" + fields
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []at
	}{
		// bpm's rules, bpm's texts.
		{"name missing", "processes:\n- executable: /bin/x\n",
			[]at{{2, "processes[0].name", "invalid config: name"}}},
		{"name empty", "processes:\n- executable: /bin/x\n  name: ''\n",
			[]at{{3, "processes[0].name", "invalid config: name"}}},
		{"executable missing", "processes:\n- name: a\n",
			[]at{{2, "processes[0].executable", "invalid config: executable"}}},
		{"executable null", "processes:\n- name: a\n  executable: ~\n",
			[]at{{3, "processes[0].executable", "invalid config: executable"}}},
		{"volume trailing slash", proc("  additional_volumes:\n  - path: /var/vcap/data/web/x/\n"),
			[]at{{5, "processes[0].additional_volumes[0].path", "volume path must be canonical, expected /var/vcap/data/web/x but got /var/vcap/data/web/x/"}}},
		{"volume double slash", proc("  additional_volumes:\n  - path: /var/vcap//data/x\n"),
			[]at{{5, "processes[0].additional_volumes[0].path", "volume path must be canonical, expected /var/vcap/data/x but got /var/vcap//data/x"}}},
		{"volume dot dot", proc("  additional_volumes:\n  - path: /var/vcap/data/../../etc\n"),
			[]at{{5, "processes[0].additional_volumes[0].path", "volume path must be canonical, expected /var/etc but got /var/vcap/data/../../etc"}}},
		{"volume empty", proc("  additional_volumes:\n  - {writable: true}\n"),
			[]at{{5, "processes[0].additional_volumes[0].path", "volume path must be canonical, expected . but got "}}},
		{"volume is job data dir", proc("  additional_volumes:\n  - path: /var/vcap/data/web\n"),
			[]at{{5, "processes[0].additional_volumes[0].path", "invalid volume path: /var/vcap/data/web cannot conflict with default job data or store directories"}}},
		{"volume is job store dir", proc("  additional_volumes:\n  - path: /var/vcap/store/web\n"),
			[]at{{5, "processes[0].additional_volumes[0].path", "invalid volume path: /var/vcap/store/web cannot conflict with default job data or store directories"}}},
		{"volume outside root", proc("  additional_volumes:\n  - path: /etc/ssl\n"),
			[]at{{5, "processes[0].additional_volumes[0].path", "invalid volume path: /etc/ssl must be within /var/vcap"}}},
		{"volume is root", proc("  additional_volumes:\n  - path: /var/vcap\n"),
			[]at{{5, "processes[0].additional_volumes[0].path", "invalid volume path: /var/vcap must be within /var/vcap"}}},
		{"volume relative", proc("  additional_volumes:\n  - path: var/vcap/data/x\n"),
			[]at{{5, "processes[0].additional_volumes[0].path", "invalid volume path: var/vcap/data/x must be within /var/vcap"}}},
		{"volume sibling of root", proc("  additional_volumes:\n  - path: /var/vcapx/data\n"),
			[]at{{5, "processes[0].additional_volumes[0].path", "invalid volume path: /var/vcapx/data must be within /var/vcap"}}},
		{"shutdown signal", proc("  shutdown_signal: KILL\n"),
			[]at{{4, "processes[0].shutdown_signal", "shutdown signal should either be 'TERM' or 'INT' (or left unspecified), but got 'KILL'"}}},
		{"shutdown signal SIGTERM", proc("  shutdown_signal: SIGTERM\n"),
			[]at{{4, "processes[0].shutdown_signal", "shutdown signal should either be 'TERM' or 'INT' (or left unspecified), but got 'SIGTERM'"}}},
		{"memory without unit", proc("  limits: {memory: 1024}\n"),
			[]at{{4, "processes[0].limits.memory", errByteQuantity.Error()}}},
		{"memory empty", proc("  limits:\n    memory: ''\n"),
			[]at{{5, "processes[0].limits.memory", errByteQuantity.Error()}}},
		{"memory zero", proc("  limits: {memory: 0G}\n"),
			[]at{{4, "processes[0].limits.memory", errByteQuantity.Error()}}},
		{"memory negative", proc("  limits: {memory: -1G}\n"),
			[]at{{4, "processes[0].limits.memory", errByteQuantity.Error()}}},

		// YAML syntax and types.
		// The line is the one at fault, where yaml.v3 says one line early.
		{"syntax", "processes:\n- name: a\n  args: [a\n",
			[]at{{3, "", "did not find expected ',' or ']'"}}},
		{"unclosed list, then more", "processes:\n- name: a\n  args: [a, b\n- name: b\n",
			[]at{{3, "", "did not find expected ',' or ']'"}}},
		{"tab", "processes:\n- name: a\n\texecutable: x\n",
			[]at{{3, "", "found a tab character that violates indentation"}}},
		{"bad indentation", "processes:\n- name: a\n  executable: x\n   env: y\n",
			[]at{{4, "", "mapping values are not allowed in this context"}}},
		{"processes misspelt", "process:\n- name: a\n  executable: x\n",
			[]at{{1, "processes", `missing, so the job runs nothing: "process" is not a key of bpm.yml (did you mean "processes"?)`}}},
		{"top level list", "- a\n", []at{{1, "", "expected a mapping, got a list"}}},
		{"processes not a list", "processes: {name: a}\n", []at{{1, "processes", "expected a list, got a mapping"}}},
		{"process not a mapping", "processes:\n- web\n", []at{{2, "processes[0]", "expected a mapping, got \"web\""}}},
		{"process null", "processes:\n- ~\n", []at{
			{2, "processes[0].name", "invalid config: name"},
			{2, "processes[0].executable", "invalid config: executable"},
		}},
		{"args mapping", proc("  args: {a: b}\n"), []at{{4, "processes[0].args", "expected a list, got a mapping"}}},
		{"args item list", proc("  args: [[a]]\n"), []at{{4, "processes[0].args[0]", "expected a string, got a list"}}},
		{"env list", proc("  env: [A]\n"), []at{{4, "processes[0].env", "expected a mapping, got a list"}}},
		{"env value mapping", proc("  env:\n    A: {b: c}\n"), []at{{5, "processes[0].env.A", "expected a string, got a mapping"}}},
		{"name list", "processes:\n- executable: /bin/x\n  name: [a]\n",
			[]at{{3, "processes[0].name", "expected a string, got a list"}}},
		{"bool", proc("  ephemeral_disk: maybe\n"), []at{{4, "processes[0].ephemeral_disk", `expected true or false, got "maybe"`}}},
		{"open_files negative", proc("  limits: {open_files: -1}\n"),
			[]at{{4, "processes[0].limits.open_files", `expected a non-negative integer, got "-1"`}}},
		{"processes limit text", proc("  limits: {processes: many}\n"),
			[]at{{4, "processes[0].limits.processes", `expected an integer, got "many"`}}},
		{"limits scalar", proc("  limits: 1G\n"), []at{{4, "processes[0].limits", `expected a mapping, got "1G"`}}},
		{"duplicate key", proc("  name: again\n"), []at{{4, "processes[0].name", `mapping key "name" already defined at line 2`}}},
		{"duplicate env key", proc("  env: {A: 1, A: 2}\n"), []at{{4, "processes[0].env.A", `mapping key "A" already defined at line 4`}}},
		{"bad merge", proc("  <<: 3\n"), []at{{4, "processes[0]", "map merge requires map or sequence of maps as the value"}}},

		// vigil's own checks.
		{"process name slash", "processes:\n- name: a/b\n  executable: /bin/x\n",
			[]at{{2, "processes[0].name", `name "a/b" contains a slash or NUL byte`}}},
		{"process name dot dot", "processes:\n- name: ..\n  executable: /bin/x\n",
			[]at{{2, "processes[0].name", `name ".." would escape its directory`}}},
		{"duplicate process", "processes:\n- {name: a, executable: /bin/a}\n- {name: b, executable: /bin/b}\n- {name: a, executable: /bin/c}\n",
			[]at{{4, "processes[2].name", `duplicate process name "a" (first defined at line 2)`}}},
		{"empty hooks", proc("  hooks: {}\n"),
			[]at{{4, "processes[0].hooks", "hooks without pre_start (bpm would fail at start: prestart hook failed: exec: no command)"}}},
		{"empty pre_start", proc("  hooks:\n    pre_start: ''\n"),
			[]at{{5, "processes[0].hooks", "hooks without pre_start (bpm would fail at start: prestart hook failed: exec: no command)"}}},
		{"relative pre_start", proc("  hooks: {pre_start: bin/pre}\n"),
			[]at{{4, "processes[0].hooks.pre_start", `pre_start must be an absolute path, but got "bin/pre"`}}},
		{"relative workdir", proc("  workdir: data\n"),
			[]at{{4, "processes[0].workdir", `workdir must be an absolute path, but got "data"`}}},
		{"capabilities", proc("  capabilities:\n  - NET_BIND_SERVICE\n  - CAP_NET_ADMIN\n  - sys_time\n  - WARP_DRIVE\n"), []at{
			{6, "processes[0].capabilities[1]", `unknown capability "CAP_NET_ADMIN" (did you mean "NET_ADMIN"?)`},
			{7, "processes[0].capabilities[2]", `unknown capability "sys_time" (did you mean "SYS_TIME"?)`},
			{8, "processes[0].capabilities[3]", `unknown capability "WARP_DRIVE": expected a Linux capability name without CAP_, such as NET_BIND_SERVICE`},
		}},
		{"unrestricted relative", proc("  unsafe:\n    unrestricted_volumes:\n    - path: dev/log\n"),
			[]at{{6, "processes[0].unsafe.unrestricted_volumes[0].path", `unrestricted volume path must be absolute, but got "dev/log"`}}},
		{"env name", proc("  env: {\"A=B\": x}\n"), []at{{4, "processes[0].env.A=B", `invalid environment variable name "A=B"`}}},

		// What bpm accepts and a start could never do (issue 33).
		{"process name newline", "processes:\n- name: \"a\\nb\"\n  executable: /bin/x\n",
			[]at{{2, "processes[0].name", `name "a\nb" contains the control character U+000A: names are printed one to a line ` +
				`(bpm list, vigil status, monit's summary), where it would forge lines (bpm accepts it)`}}},
		{"process name NEL", "processes:\n- name: \"a\\Nb\"\n  executable: /bin/x\n",
			[]at{{2, "processes[0].name", `name "a\u0085b" contains the control character U+0085: names are printed one to a line ` +
				`(bpm list, vigil status, monit's summary), where it would forge lines (bpm accepts it)`}}},
		{"process name 300 bytes", "processes:\n- name: " + strings.Repeat("x", 300) + "\n  executable: /bin/x\n",
			[]at{{2, "processes[0].name", "name is 300 bytes: its log file NAME.stderr.log would be 311 bytes, past the 255 " +
				"a file name may have, so the process could never start (bpm accepts the name and fails at start)"}}},
		{"process name too long for its systemd unit", "processes:\n- name: " + strings.Repeat("-", 70) + "\n  executable: /bin/x\n",
			[]at{{2, "processes[0].name", "name is 70 bytes: its systemd unit vigil-JOB-NAME.service (each byte but letters, digits, " +
				"':', '_' and '.' written as 4) would be 298 bytes, past the 255 a file name may have, so the process could never " +
				"start (bpm accepts the name and fails at start)"}}},
		{"env value 10 MB", proc("  env:\n    BIG: " + strings.Repeat("s", 10<<20) + "\n"),
			[]at{{5, "processes[0].env.BIG", "the value (not shown) is 10485760 bytes: exec refuses an environment string " +
				"(KEY=VALUE) over 131071 bytes (E2BIG: argument list too long), so the process could never start " +
				"(bpm accepts it and fails at start)"}}},
		{"env too big together", proc("  env:\n" + manyEnv(31, 100000)),
			[]at{{5, "processes[0].env", "the arguments and the environment come to 3100612 bytes: exec refuses more than 2097152 " +
				"(E2BIG: argument list too long, with the default 8 MiB stack), so the process could never start " +
				"(bpm accepts it and fails at start)"}}},
		{"env value NUL", proc("  env: {SECRET: \"x\\0y\"}\n"),
			[]at{{4, "processes[0].env.SECRET", "the value (not shown) contains a NUL byte, which exec cannot pass (EINVAL), " +
				"so the process could never start (bpm accepts it and fails at start)"}}},
		{"argument NUL", proc("  args: [\"a\\0b\"]\n"),
			[]at{{4, "processes[0].args[0]", "the argument contains a NUL byte, which exec cannot pass (EINVAL), " +
				"so the process could never start (bpm accepts it and fails at start)"}}},
		{"argument 200 KB", proc("  args: [ok, " + strings.Repeat("a", 200000) + "]\n"),
			[]at{{4, "processes[0].args[1]", "the argument is 200000 bytes: exec refuses a string over 131071 (E2BIG: argument " +
				"list too long), so the process could never start (bpm accepts it and fails at start)"}}},
		{"executable NUL", "processes:\n- name: web\n  executable: \"/bin/x\\0\"\n",
			[]at{{3, "processes[0].executable", "the path contains a NUL byte, which no path can hold (exec fails with EINVAL), " +
				"so the process could never start (bpm accepts it and fails at start)"}}},
		{"open_files 0", proc("  limits: {open_files: 0}\n"),
			[]at{{4, "processes[0].limits.open_files", "open_files must be at least 4, but got 0: stdin, stdout and stderr take " +
				"descriptors 0 to 2, and the dynamic loader opens each library on the next, so the executable could never " +
				"start (EMFILE); bpm accepts it and fails at start"}}},
		{"open_files 4 with notify fd 3", proc("  limits: {open_files: 4}\n  health: {notify: \"fd:3\"}\n"),
			[]at{{4, "processes[0].limits.open_files", "open_files must be at least 5, but got 4: stdin, stdout, stderr and the " +
				"notify fd take descriptors 0 to 3, and the dynamic loader opens each library on the next, so the executable " +
				"could never start (EMFILE); bpm accepts it and fails at start"}}},
		{"notify socket path too long", "processes:\n- name: " + strings.Repeat("n", 80) + "\n  executable: /bin/x\n  health: {notify: systemd}\n",
			[]at{{4, "processes[0].health.notify", "the notification socket /var/vcap/data/web/tmp/vigil-" + strings.Repeat("n", 80) +
				".notify would be 116 bytes, past the 107 a unix socket's path may have, so the process could never start: " +
				"shorten the process's or the job's name"}}},

		// Every error of the file is reported, in line order.
		{"all errors", "processes:\n- name: a\n  shutdown_signal: HUP\n- executable: /bin/b\n  additional_volumes: [{path: /tmp}]\n", []at{
			{2, "processes[0].executable", "invalid config: executable"},
			{3, "processes[0].shutdown_signal", "shutdown signal should either be 'TERM' or 'INT' (or left unspecified), but got 'HUP'"},
			{4, "processes[1].name", "invalid config: name"},
			{5, "processes[1].additional_volumes[0].path", "invalid volume path: /tmp must be within /var/vcap"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j, _, err := Parse(vcap, "web", "/var/vcap/jobs/web/config/bpm.yml", []byte(tt.src))
			if j != nil {
				t.Error("Parse returned a job with an error")
			}
			sameAts(t, "errors", errorsOf(t, err, "/var/vcap/jobs/web/config/bpm.yml"), tt.want)
		})
	}
}

// TestParseOtherRoot checks that the layout root replaces /var/vcap in the
// volume rules and their texts.
func TestParseOtherRoot(t *testing.T) {
	l := layout(t, "/srv/bosh")
	src := proc("  additional_volumes:\n  - path: /srv/bosh/data/x\n  - path: /var/vcap/data/x\n  - path: /srv/bosh/store/web\n")
	_, _, err := Parse(l, "web", "f", []byte(src))
	sameAts(t, "errors", errorsOf(t, err, "f"), []at{
		{6, "processes[0].additional_volumes[1].path", "invalid volume path: /var/vcap/data/x must be within /srv/bosh"},
		{7, "processes[0].additional_volumes[2].path", "invalid volume path: /srv/bosh/store/web cannot conflict with default job data or store directories"},
	})
}

func TestParseJobName(t *testing.T) {
	for _, name := range []string{"", "..", "a/b", "a\nb", "a\x85b", "a\xffb"} {
		_, _, err := Parse(vcap, name, "f", []byte(proc("")))
		got := errorsOf(t, err, "f")
		if len(got) != 1 || got[0].line != 0 || got[0].field != "" || !strings.HasPrefix(got[0].msg, "invalid job name: ") {
			t.Errorf("job %q: %v", name, got)
		}
	}
}

func TestErrorFormatting(t *testing.T) {
	cause := errors.New("cause")
	e := &ConfigError{File: "f.yml", Line: 3, Field: "processes[0].name", Msg: "bad", Err: cause}
	if e.Error() != "f.yml:3: processes[0].name: bad" || !errors.Is(e, cause) {
		t.Errorf("Error() = %q", e.Error())
	}
	list := ErrorList{e, {File: "f.yml", Msg: "no line"}}
	if list.Error() != "f.yml:3: processes[0].name: bad\nf.yml: no line" {
		t.Errorf("ErrorList.Error() = %q", list.Error())
	}
	var ce *ConfigError
	if !errors.As(error(list), &ce) || ce != e || !errors.Is(list, cause) {
		t.Error("errors.As/Is do not see through ErrorList")
	}
	w := Warning{File: "f.yml", Line: 7, Field: "x", Msg: "hm"}
	if w.String() != "f.yml:7: x: hm" {
		t.Errorf("Warning.String() = %q", w.String())
	}
}

// manyEnv is n env entries K0..K(n-1) of size bytes each, for a bpm.yml.
func manyEnv(n, size int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "    K%d: %s\n", i, strings.Repeat("s", size))
	}
	return b.String()
}
