package bpmcli

import (
	"slices"
	"testing"
)

func TestEncodeID(t *testing.T) {
	for in, want := range map[string]string{
		"bpm-server.server":     "bpm-server.2eserver",
		"test-server!@*&":       "test-server.21.40.2a.26",
		"web.web":               "web.2eweb",
		"Job_1.proc-2":          "Job_1.2eproc-2",
		"caf\xc3\xa9.\x00weird": "caf.c3.a9.2e.00weird",
	} {
		if got := encodeID(in); got != want {
			t.Errorf("encodeID(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseFlags(t *testing.T) {
	specs := []flagSpec{
		{long: "process", short: 'p', kind: stringFlag},
		{long: "volume", short: 'v', kind: listFlag},
		{long: "all", short: 'a', kind: boolFlag},
		{long: "follow", short: 'f', kind: boolFlag},
		{long: "lines", short: 'n', kind: intFlag, def: "25"},
	}
	tests := []struct {
		args    []string
		pos     []string
		process string
		volumes []string
		all     bool
		lines   int
		err     string
	}{
		{args: []string{"job"}, pos: []string{"job"}, lines: 25},
		{args: []string{"-p", "proc", "job"}, pos: []string{"job"}, process: "proc", lines: 25},
		{args: []string{"job", "--process=proc", "extra"}, pos: []string{"job", "extra"}, process: "proc", lines: 25},
		{args: []string{"job", "-pproc", "-p=other"}, pos: []string{"job"}, process: "other", lines: 25},
		{args: []string{"-v", "/a:writable", "job", "--volume", "/b"}, pos: []string{"job"}, volumes: []string{"/a:writable", "/b"}, lines: 25},
		{args: []string{"-afn3", "job"}, pos: []string{"job"}, all: true, lines: 3},
		{args: []string{"--all=false", "-n", "7", "--", "-p"}, pos: []string{"-p"}, lines: 7},
		{args: []string{"job", "-p"}, err: "flag needs an argument: 'p' in -p"},
		{args: []string{"--process"}, err: "flag needs an argument: --process"},
		{args: []string{"--nope"}, err: "unknown flag: --nope"},
		{args: []string{"-ax"}, err: "unknown shorthand flag: 'x' in -ax"},
		{args: []string{"-n", "x"}, err: `invalid argument "x" for "-n, --lines" flag: strconv.ParseInt: parsing "x": invalid syntax`},
	}
	for _, tt := range tests {
		p, err := parseFlags(specs, tt.args)
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("%q: error %v, want %q", tt.args, err, tt.err)
			}
			continue
		}
		if err != nil || !slices.Equal(p.pos, tt.pos) || p.str("process") != tt.process ||
			!slices.Equal(p.list("volume"), tt.volumes) || p.bool("all") != tt.all || p.int("lines") != tt.lines {
			t.Errorf("%q: got %+v, %v", tt.args, p, err)
		}
	}
}

// TestVersionString: a release build prints bpm's version with vigil's as
// semver build metadata; a development build prints bpm's own marker.
func TestVersionString(t *testing.T) {
	for v, want := range map[string]string{"": "[DEV BUILD]", "0.2.0": "1.4.38+vigil.0.2.0"} {
		if got := versionString(Env{Version: v}); got != want {
			t.Errorf("versionString(%q) = %q, want %q", v, got, want)
		}
	}
}
