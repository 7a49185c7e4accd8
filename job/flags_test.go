package job

import (
	"errors"
	"path/filepath"
	"slices"
	"testing"
)

func TestParseVolumeFlag(t *testing.T) {
	tests := []struct {
		in      string
		want    Volume
		wantErr string
	}{
		{in: "/var/vcap/data/x", want: Volume{Path: "/var/vcap/data/x"}},
		{in: "/var/vcap/data/x:writable", want: Volume{Path: "/var/vcap/data/x", Writable: true}},
		{in: "/v:writable,mount_only,allow_executions,shared", want: Volume{Path: "/v", Writable: true, MountOnly: true, AllowExecutions: true, Shared: true}},
		{in: "relative", want: Volume{Path: "relative"}}, // the path is WithRunOverrides' to check
		{in: "/a:writable:x", wantErr: "invalid volume definition (format: <path>[:<options>]): /a:writable:x"},
		{in: "/a:writeable", wantErr: "invalid volume option: writeable"},
		{in: "/a:writable,", wantErr: "invalid volume option: "},
		{in: "/a:", wantErr: "invalid volume option: "},
	}
	for _, tt := range tests {
		got, err := ParseVolumeFlag(tt.in)
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("ParseVolumeFlag(%q) error = %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseVolumeFlag(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}

func TestParseEnvFlag(t *testing.T) {
	tests := []struct{ in, key, value, err string }{
		{in: "A=1", key: "A", value: "1"},
		{in: "A=", key: "A", value: ""},
		{in: "A=b=c", key: "A", value: "b=c"},
		{in: "=x", key: "", value: "x"},
		{in: "A", err: `invalid envionment variable definition (format should be KEY=value): "A"`},
		{in: "", err: `invalid envionment variable definition (format should be KEY=value): ""`},
	}
	for _, tt := range tests {
		k, v, err := ParseEnvFlag(tt.in)
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("ParseEnvFlag(%q) error = %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || k != tt.key || v != tt.value {
			t.Errorf("ParseEnvFlag(%q) = %q, %q, %v", tt.in, k, v, err)
		}
	}
}

func TestWithRunOverrides(t *testing.T) {
	j := mustParse(t, proc("  env: {A: '1', B: '2'}\n  additional_volumes: [{path: /var/vcap/data/a}]\n"))
	p := j.Processes[0]
	extra := Volume{Path: "/var/vcap/store/web/backup", Writable: true}
	q, err := p.WithRunOverrides(vcap, []Volume{extra}, map[string]string{"B": "3", "C": "4"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []Volume{{Path: "/var/vcap/data/a"}, extra}; !slices.Equal(q.AdditionalVolumes, want) {
		t.Errorf("volumes = %+v", q.AdditionalVolumes)
	}
	if q.Env["A"] != "1" || q.Env["B"] != "3" || q.Env["C"] != "4" {
		t.Errorf("env = %v", q.Env)
	}
	if len(p.AdditionalVolumes) != 1 || p.Env["B"] != "2" || len(p.Env) != 2 {
		t.Errorf("original modified: %+v", p)
	}
	if r, err := p.WithRunOverrides(vcap, nil, nil); err != nil || !r.Equal(p) {
		t.Errorf("no overrides: %v, changed=%v", err, !r.Equal(p))
	}
}

func TestWithRunOverridesValidates(t *testing.T) {
	p := mustParse(t, "processes:\n- {name: a, executable: /bin/a}\n- {name: b, executable: /bin/b, additional_volumes: [{path: /var/vcap/data/b}]}\n").Processes[1]
	tests := []struct {
		name string
		vols []Volume
		env  map[string]string
		want []at
	}{
		{"outside root", []Volume{{Path: "/etc"}}, nil,
			[]at{{0, "processes[1].additional_volumes[1].path", "invalid volume path: /etc must be within /var/vcap"}}},
		{"job data dir", []Volume{{Path: "/var/vcap/data/x"}, {Path: "/var/vcap/data/web"}}, nil,
			[]at{{0, "processes[1].additional_volumes[2].path", "invalid volume path: /var/vcap/data/web cannot conflict with default job data or store directories"}}},
		{"not canonical", []Volume{{Path: "/var/vcap/data/x/"}}, nil,
			[]at{{0, "processes[1].additional_volumes[1].path", "volume path must be canonical, expected /var/vcap/data/x but got /var/vcap/data/x/"}}},
		{"empty env key", nil, map[string]string{"": "x"},
			[]at{{0, "processes[1].env.", `invalid environment variable name ""`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := p.WithRunOverrides(vcap, tt.vols, tt.env)
			sameAts(t, "errors", errorsOf(t, err, "bpm.yml"), tt.want)
		})
	}
}

func TestWithRunOverridesPATH(t *testing.T) {
	root := t.TempDir()
	l := layout(t, root)
	writeFile(t, filepath.Join(root, "jobs/web/bin/tool"), "#!/bin/sh\n", 0o755)
	writeFile(t, filepath.Join(root, "packages/x/bin/tool"), "#!/bin/sh\n", 0o755)
	writeFile(t, l.BPMConfig("web"), "processes:\n- {name: web, executable: tool}\n", 0o644)
	j, _, err := Load(l, "web")
	if err != nil {
		t.Fatal(err)
	}
	p := j.Processes[0]
	if p.ResolvedExecutable != filepath.Join(root, "jobs/web/bin/tool") {
		t.Fatalf("resolved %q", p.ResolvedExecutable)
	}
	q, err := p.WithRunOverrides(l, nil, map[string]string{"PATH": filepath.Join(root, "packages/x/bin")})
	if err != nil || q.ResolvedExecutable != filepath.Join(root, "packages/x/bin/tool") {
		t.Errorf("after PATH override: %q, %v", q.ResolvedExecutable, err)
	}
	_, err = p.WithRunOverrides(l, nil, map[string]string{"PATH": "/nonexistent"})
	sameAts(t, "errors", errorsOf(t, err, l.BPMConfig("web")), []at{{0, "processes[0].executable", `executable "tool" not found in PATH /nonexistent`}})
	var ce *ConfigError
	if !errors.As(err, &ce) {
		t.Error("not a ConfigError")
	}
}
