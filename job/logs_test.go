package job

import (
	"os"
	"strings"
	"testing"
)

func TestLogsKey(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		want LogRotation
	}{
		{`{max_size: 100MB, keep: 3}`, LogRotation{MaxSize: 100 << 20, Keep: 3}},
		{`{max_size: 1G}`, LogRotation{MaxSize: 1 << 30, Keep: DefaultLogKeep}},
		{`{max_size: 65536}`, LogRotation{MaxSize: 65536, Keep: DefaultLogKeep}},
		{`{max_size: 4KiB, keep: 100}`, LogRotation{MaxSize: 4096, Keep: 100}},
		{`{}`, LogRotation{}},
		{`{timestamps: true}`, LogRotation{Timestamps: true}},
		{`{max_size: 1G, timestamps: true}`, LogRotation{MaxSize: 1 << 30, Keep: DefaultLogKeep, Timestamps: true}},
	} {
		src := "processes:\n- name: a\n  executable: /bin/a\n  logs: " + tc.yaml + "\n"
		j, warns, err := Parse(vcap, "web", "bpm.yml", []byte(src))
		if err != nil || len(warns) != 0 {
			t.Fatalf("%s: err %v, warnings %v", tc.yaml, err, warns)
		}
		if got := j.Processes[0].Logs; got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.yaml, got, tc.want)
		}
	}
}

func TestLogsKeyErrors(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{`{max_size: 1KB}`, "bpm.yml:4: processes[0].logs.max_size: logs.max_size must be at least 4096 bytes"},
		{`{max_size: 100}`, "bpm.yml:4: processes[0].logs.max_size: logs.max_size must be at least 4096 bytes"},
		{`{max_size: 10 apples}`, "bpm.yml:4: processes[0].logs.max_size: byte quantity must be a positive integer"},
		{`{max_size: -5}`, `bpm.yml:4: processes[0].logs.max_size: expected a non-negative integer, got "-5"`},
		{`{max_size: 1MB, keep: 0}`, "bpm.yml:4: processes[0].logs.keep: logs.keep must be between 1 and 100"},
		{`{max_size: 1MB, keep: 101}`, "bpm.yml:4: processes[0].logs.keep: logs.keep must be between 1 and 100"},
		{`{max_size: 1MB, keep: many}`, `bpm.yml:4: processes[0].logs.keep: expected an integer, got "many"`},
		{`{keep: 2}`, "bpm.yml:4: processes[0].logs.keep: logs.keep needs logs.max_size"},
		{`[1]`, "bpm.yml:4: processes[0].logs"},
		{`{timestamps: sometimes}`, "bpm.yml:4: processes[0].logs.timestamps"},
	} {
		src := "processes:\n- name: a\n  executable: /bin/a\n  logs: " + tc.yaml + "\n"
		_, _, err := Parse(vcap, "web", "bpm.yml", []byte(src))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.yaml, err, tc.want)
		}
	}
}

func TestLogsKeyUnknownSubkeyWarns(t *testing.T) {
	src := "processes:\n- name: a\n  executable: /bin/a\n  logs: {max_size: 1MB, kept: 2}\n"
	_, warns, err := Parse(vcap, "web", "bpm.yml", []byte(src))
	if err != nil || len(warns) != 1 || !strings.Contains(warns[0].String(), `unknown key "kept" (did you mean "keep"?)`) {
		t.Fatalf("err %v, warnings %v", err, warns)
	}
}

func TestLogsTestdata(t *testing.T) {
	data, err := os.ReadFile("testdata/logs.yml")
	if err != nil {
		t.Fatal(err)
	}
	j, warns, err := Parse(vcap, "web", "logs.yml", data)
	if err != nil || len(warns) != 0 {
		t.Fatalf("err %v, warnings %v", err, warns)
	}
	if j.Processes[0].Logs != (LogRotation{MaxSize: 100 << 20, Keep: 3}) || j.Processes[1].Logs != (LogRotation{MaxSize: 65536, Keep: DefaultLogKeep}) {
		t.Fatalf("got %+v, %+v", j.Processes[0].Logs, j.Processes[1].Logs)
	}
	changed := j.Processes[0]
	changed.Logs.Keep = 4
	if changed.Equal(j.Processes[0]) {
		t.Fatal("Equal ignores the logs key")
	}
}
