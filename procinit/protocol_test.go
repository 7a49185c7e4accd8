package procinit

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestEncodeIsJSON: the init's hand-made encoding of a report is byte for
// byte what encoding/json writes, for every field and for strings that
// need escaping.
func TestEncodeIsJSON(t *testing.T) {
	odd := []string{"", "plain", `quote " and \ back`, "tab\tnl\nret\rbs\bff\f", "\x00\x01\x1f\x7f",
		"<script>&amp;</script>", "é ü 日本", "\u2028\u2029", "bad \xff\xfe utf-8", "cut \xe6\x97"}
	reports := []Report{
		{Event: EventRunning, PID: 4242, Warnings: []string{"no cgroup", "seccomp: \"off\""}},
		{Event: EventExit, Code: 3, Signal: 9, Dropped: 1 << 40, OOM: true, DroppedStdout: 7, DroppedStderr: -1},
		{Event: EventOutput, DroppedStdout: 5, Dropping: true},
		{Event: EventFailed, Error: "exec /x: no such file"},
		{},
	}
	for _, s := range odd {
		reports = append(reports, Report{Event: s, Error: s, Warnings: []string{s, s}})
	}
	for _, r := range reports {
		want, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if got := encode(r); !bytes.Equal(got, append(want, '\n')) {
			t.Errorf("encode(%+v)\n got %s\nwant %s", r, got, want)
		}
	}
}

// FuzzEncode holds the hand-made encoding to encoding/json's for any
// strings and numbers.
func FuzzEncode(f *testing.F) {
	f.Add("running", "", "w", 1, int64(0), false)
	f.Add("x\xff<\u2028", "\"\\", "\x00", -5, int64(-1), true)
	f.Fuzz(func(t *testing.T, ev, msg, warn string, n int, big int64, flag bool) {
		r := Report{Event: ev, PID: n, Code: n, Signal: -n, Error: msg, Dropped: big, OOM: flag,
			Warnings: []string{warn}, DroppedStdout: big, DroppedStderr: -big, Dropping: !flag}
		want, _ := json.Marshal(r)
		if got := encode(r); !bytes.Equal(got, append(want, '\n')) {
			t.Fatalf("encode(%+v)\n got %s\nwant %s", r, got, want)
		}
	})
}
