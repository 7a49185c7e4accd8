package job

import (
	"os"
	"slices"
	"syscall"
	"testing"
)

func TestParseGorouter(t *testing.T) {
	data, err := os.ReadFile("testdata/gorouter.yml")
	if err != nil {
		t.Fatal(err)
	}
	j, warns, err := Parse(vcap, "gorouter", "testdata/gorouter.yml", data)
	if err != nil || len(warns) > 0 {
		t.Fatalf("Parse: %v, warnings %v", err, warns)
	}
	if j.Name != "gorouter" || j.ConfigPath != "/var/vcap/jobs/gorouter/config/bpm.yml" || j.Errand {
		t.Errorf("job = %q %q errand=%v", j.Name, j.ConfigPath, j.Errand)
	}
	if len(j.Processes) != 2 {
		t.Fatalf("got %d processes", len(j.Processes))
	}
	gr, ok := j.Process("gorouter")
	if !ok {
		t.Fatal("no gorouter process")
	}
	mem, files := uint64(2<<30), uint64(100000)
	want := Process{
		Job: "gorouter", Name: "gorouter",
		Executable:         "/var/vcap/packages/gorouter/bin/gorouter",
		ResolvedExecutable: "/var/vcap/packages/gorouter/bin/gorouter",
		Args:               []string{"-c", "/var/vcap/jobs/gorouter/config/gorouter.yml"},
		Env:                map[string]string{"GODEBUG": "x509sha1=1"},
		Workdir:            "/var/vcap/jobs/gorouter",
		Hooks:              Hooks{PreStart: "/var/vcap/jobs/gorouter/bin/bpm-pre-start"},
		Capabilities:       []string{"NET_BIND_SERVICE"},
		Limits:             Limits{Memory: &mem, OpenFiles: &files},
		ShutdownSignal:     syscall.SIGTERM,
	}
	if !gr.Equal(want) {
		t.Errorf("gorouter =\n%+v\nwant\n%+v", gr, want)
	}
	if gr.Source != (Source{"testdata/gorouter.yml", 2}) {
		t.Errorf("Source = %+v", gr.Source)
	}
	hc := j.Processes[1]
	if hc.Source.Line != 9 || !slices.Equal(hc.AdditionalVolumes, []Volume{{Path: "/var/vcap/data/gorouter-healthchecker/counter", Writable: true}}) {
		t.Errorf("healthchecker = %+v", hc)
	}
	if _, ok := j.Process("nope"); ok {
		t.Error("Process(nope) found something")
	}
}

func TestParseDefaults(t *testing.T) {
	j := mustParse(t, `
processes:
- {name: a, executable: /bin/a}
- {name: b, executable: bin/b, workdir: /w, shutdown_signal: INT}
- {name: c, executable: c, shutdown_signal: TERM}
- {name: d, executable: /bin/d, shutdown_signal: "", workdir: ""}
- {name: e, executable: /bin/e, shutdown_signal: ~, hooks: ~, limits: ~, env: ~}
`)
	tests := []struct {
		workdir, resolved string
		sig               syscall.Signal
	}{
		{"/var/vcap/jobs/web", "/bin/a", syscall.SIGTERM},
		{"/w", "/w/bin/b", syscall.SIGINT},
		{"/var/vcap/jobs/web", "", syscall.SIGTERM}, // bare name: Load looks it up
		{"/var/vcap/jobs/web", "/bin/d", syscall.SIGTERM},
		{"/var/vcap/jobs/web", "/bin/e", syscall.SIGTERM},
	}
	for i, tt := range tests {
		p := j.Processes[i]
		if p.Workdir != tt.workdir || p.ResolvedExecutable != tt.resolved || p.ShutdownSignal != tt.sig || p.Job != "web" {
			t.Errorf("process %d: workdir %q resolved %q signal %v job %q; want %+v", i, p.Workdir, p.ResolvedExecutable, p.ShutdownSignal, p.Job, tt)
		}
	}
	e := j.Processes[4]
	if e.Hooks.PreStart != "" || e.Limits != (Limits{}) || e.Env != nil || e.EphemeralDisk || e.Unsafe.Privileged {
		t.Errorf("null values did not give zero values: %+v", e)
	}
}

// TestParseValues checks that values are read as bpm's yaml.v3 reads them.
func TestParseValues(t *testing.T) {
	j := mustParse(t, `
anchors:
  base: &base {executable: /bin/x, ephemeral_disk: yes, limits: {processes: 7}}
processes:
- <<: *base
  name: a
  args: [--port, 2424, true, 1.5]
  env: {N: 1, B: false}
  limits: {open_files: 0x10, memory: 1.5kib, core_file_size: 0}
  persistent_disk: on
  capabilities: [SYS_ADMIN, CHECKPOINT_RESTORE]
  unsafe: {privileged: true, host_pid_namespace: true, unrestricted_volumes: [{path: /dev/log, writable: true}, {path: "/var/vcap/data/*/x"}]}
  additional_volumes: [{path: /var/vcap/data/x, mount_only: true, shared: true, allow_executions: true}, {path: /var/vcap/store/web/sub}]
- {<<: [*base], name: b, executable: /bin/b}
`)
	a, b := j.Processes[0], j.Processes[1]
	if !slices.Equal(a.Args, []string{"--port", "2424", "true", "1.5"}) {
		t.Errorf("args = %q", a.Args)
	}
	if a.Env["N"] != "1" || a.Env["B"] != "false" {
		t.Errorf("env = %q", a.Env)
	}
	if *a.Limits.OpenFiles != 16 || *a.Limits.Memory != 1536 || *a.Limits.CoreFileSize != 0 {
		t.Errorf("limits = %d %d %d", *a.Limits.OpenFiles, *a.Limits.Memory, *a.Limits.CoreFileSize)
	}
	if a.Limits.Processes != nil { // explicit limits replace the merged mapping whole
		t.Errorf("limits.processes = %d, want nil", *a.Limits.Processes)
	}
	if !a.EphemeralDisk || !a.PersistentDisk || !a.Unsafe.Privileged || !a.Unsafe.HostPIDNamespace {
		t.Errorf("booleans = %+v", a)
	}
	if want := []Volume{{Path: "/dev/log", Writable: true}, {Path: "/var/vcap/data/*/x"}}; !slices.Equal(a.Unsafe.UnrestrictedVolumes, want) {
		t.Errorf("unrestricted = %+v", a.Unsafe.UnrestrictedVolumes)
	}
	if want := (Volume{Path: "/var/vcap/data/x", MountOnly: true, Shared: true, AllowExecutions: true}); a.AdditionalVolumes[0] != want {
		t.Errorf("volume = %+v", a.AdditionalVolumes[0])
	}
	if b.Executable != "/bin/b" || !b.EphemeralDisk || b.Limits.Processes == nil || *b.Limits.Processes != 7 {
		t.Errorf("merged process b = %+v", b)
	}
}

func TestParseByteSize(t *testing.T) {
	tests := []struct {
		in   string
		want uint64
	}{
		{"1B", 1}, {"1b", 1}, {"2K", 2 << 10}, {"2kb", 2 << 10}, {"2KiB", 2 << 10},
		{"3M", 3 << 20}, {"3MB", 3 << 20}, {"3mib", 3 << 20}, {"2G", 2 << 30}, {"2GB", 2 << 30},
		{"2GiB", 2 << 30}, {"1T", 1 << 40}, {"1TB", 1 << 40}, {"1TiB", 1 << 40}, {"1P", 1 << 50},
		{"1PB", 1 << 50}, {"1PiB", 1 << 50}, {"1E", 1 << 60}, {"15EB", 15 << 60}, {"1EiB", 1 << 60},
		{" 1.5G ", 3 << 29}, {"+4M", 4 << 20}, {"0.5K", 512}, {"1_0M", 10 << 20}, // strconv.ParseFloat, as bytefmt
	}
	for _, tt := range tests {
		if got, err := parseByteSize(tt.in); err != nil || got != tt.want {
			t.Errorf("parseByteSize(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
	for _, in := range []string{"", "12", "G", "0M", "-1G", "1 G", "1XB", "1GBB", "16E", "0.1B", "NaNM", "1e3M", "inf"} {
		if got, err := parseByteSize(in); err != errByteQuantity {
			t.Errorf("parseByteSize(%q) = %d, %v; want errByteQuantity", in, got, err)
		}
	}
}

func TestUnknownKeyWarnings(t *testing.T) {
	src := `processes:
- name: a
  executable: /bin/a
  shutdown_singal: INT
  Name: x
  helth: {}
  limits: {memroy: 1G, cpu_wieght: 3}
  hooks: {pre_strat: /x, pre_start: /bin/pre}
  unsafe: {privilegd: true}
  additional_volumes:
  - path: /var/vcap/data/a
    writeable: true
processs: []
`
	j, warns, err := Parse(vcap, "web", "bpm.yml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	sameAts(t, "warnings", warningsOf(t, warns, "bpm.yml"), []at{
		{4, "processes[0].shutdown_singal", `unknown key "shutdown_singal" (did you mean "shutdown_signal"?)`},
		{5, "processes[0].Name", `unknown key "Name" (did you mean "name"?)`},
		{6, "processes[0].helth", `unknown key "helth" (did you mean "health"?)`},
		{7, "processes[0].limits.memroy", `unknown key "memroy" (did you mean "memory"?)`},
		{7, "processes[0].limits.cpu_wieght", `unknown key "cpu_wieght" (did you mean "cpu_weight"?)`},
		{8, "processes[0].hooks.pre_strat", `unknown key "pre_strat" (did you mean "pre_start"?)`},
		{9, "processes[0].unsafe.privilegd", `unknown key "privilegd" (did you mean "privileged"?)`},
		{12, "processes[0].additional_volumes[0].writeable", `unknown key "writeable" (did you mean "writable"?)`},
		{13, "processs", `unknown key "processs" (did you mean "processes"?)`},
	})
	// Unknown keys change nothing: the typo leaves the volume read-only, as in bpm.
	if p := j.Processes[0]; p.AdditionalVolumes[0].Writable || p.ShutdownSignal != syscall.SIGTERM || p.Name != "a" {
		t.Errorf("unknown keys changed the process: %+v", p)
	}
}

func TestNoProcessesWarning(t *testing.T) {
	for _, src := range []string{"", "---\n", "processes: []\n", "processes:\n", "# only a comment\n"} {
		j, warns, err := Parse(vcap, "web", "bpm.yml", []byte(src))
		if err != nil || len(j.Processes) != 0 {
			t.Fatalf("%q: %v", src, err)
		}
		line := 0
		if src == "processes: []\n" || src == "processes:\n" {
			line = 1
		}
		sameAts(t, src, warningsOf(t, warns, "bpm.yml"), []at{{line, "processes", "no processes: nothing to run"}})
	}
}

func TestParseTestdata(t *testing.T) {
	data, err := os.ReadFile("testdata/full.yml")
	if err != nil {
		t.Fatal(err)
	}
	j, warns, err := Parse(vcap, "program", "full.yml", data)
	if err != nil || len(warns) > 0 || len(j.Processes) != 2 {
		t.Fatalf("full.yml: %v, warnings %v", err, warns)
	}
	p := j.Processes[0]
	if p.ShutdownSignal != syscall.SIGINT || len(p.AdditionalVolumes) != 4 || !p.AdditionalVolumes[3].Shared ||
		len(p.Unsafe.UnrestrictedVolumes) != 2 || *p.Limits.Processes != 1000 || p.Workdir != "/var/vcap/data/program" {
		t.Errorf("full.yml process = %+v", p)
	}

	data, err = os.ReadFile("testdata/invalid.yml")
	if err != nil {
		t.Fatal(err)
	}
	_, warns, err = Parse(vcap, "web", "invalid.yml", data)
	sameAts(t, "invalid.yml warnings", warningsOf(t, warns, "invalid.yml"), []at{
		{9, "processes[0].additional_volumes[0].writeable", `unknown key "writeable" (did you mean "writable"?)`},
	})
	if got := errorsOf(t, err, "invalid.yml"); len(got) != 10 {
		t.Errorf("invalid.yml: %d errors, want 10:%s", len(got), fmtAts(got))
	}
}

func TestNonStringKeyWarning(t *testing.T) {
	_, warns, err := Parse(vcap, "web", "bpm.yml", []byte(proc("  ? [a, b]\n  : c\n")))
	if err != nil {
		t.Fatal(err)
	}
	sameAts(t, "warnings", warningsOf(t, warns, "bpm.yml"), []at{{4, "processes[0]", "ignored key that is not a string but a list"}})
}

// TestProcessesWithoutLimit holds limits.processes to bpm's meaning: runc
// reads 0 as "not set" and a negative number as "max", so such a file runs
// without a pids limit, with a warning that says so at its line.
func TestProcessesWithoutLimit(t *testing.T) {
	for _, n := range []string{"0", "-1"} {
		src := "processes:\n- name: web\n  executable: /bin/web\n  limits: {processes: " + n + "}\n"
		j, warns, err := Parse(vcap, "web", "bpm.yml", []byte(src))
		if err != nil {
			t.Fatalf("processes %s: %v", n, err)
		}
		if p := j.Processes[0].Limits.Processes; p != nil {
			t.Errorf("processes %s: a limit of %d is applied", n, *p)
		}
		sameAts(t, n, warningsOf(t, warns, "bpm.yml"), []at{{4, "processes[0].limits.processes", "processes " + n +
			" sets no limit (bpm's runc reads 0 and negative numbers as none), so vigil applies none: give a positive " +
			"number to bound the process's tasks, or leave the key out"}})
	}
}
