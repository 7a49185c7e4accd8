package procinit

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/vigil-bosh/vigil/internal/jsonwire/jsonwiretest"
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

// TestEncodeExitRecord: an exit record as the init leaves it is what
// encoding/json writes for it.
func TestEncodeExitRecord(t *testing.T) {
	var full ExitRecord
	jsonwiretest.Fill(&full)
	for _, rec := range []ExitRecord{full, {}, {PID: 7, Report: Report{Event: EventExit, Signal: 15}}} {
		want, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		if got := encodeExitRecord(rec); !bytes.Equal(got, want) {
			t.Errorf("encodeExitRecord(%+v)\n got %s\nwant %s", rec, got, want)
		}
	}
}

// TestExitClaim: a claim is an exit record without its report, as
// encoding/json reads it, and the init reads the pid a claim or a record
// names, and none from anything else.
func TestExitClaim(t *testing.T) {
	var rec ExitRecord
	if err := json.Unmarshal(ExitClaim(4321), &rec); err != nil || !reflect.DeepEqual(rec, ExitRecord{PID: 4321}) {
		t.Fatalf("claim %s reads as %+v, %v", ExitClaim(4321), rec, err)
	}
	for b, want := range map[string]int{
		string(ExitClaim(4321)): 4321,
		string(encodeExitRecord(ExitRecord{PID: 7, Report: Report{Event: EventExit, Code: 1}})): 7,
		`{"pid":12`: 0, `4321`: 0, ``: 0, `{"pid":"12"}`: 0,
	} {
		if got := claimant([]byte(b)); got != want {
			t.Errorf("claimant(%q) = %d, want %d", b, got, want)
		}
	}
}

// TestDecodeReportIsJSON: a report with every field set, and the odd
// ones, decode as encoding/json decodes them.
func TestDecodeReportIsJSON(t *testing.T) {
	var full Report
	jsonwiretest.Fill(&full)
	for _, line := range []string{string(encode(full)), `{"event":"exit","code":3,"future":{"a":[1,"x"]},"oom":true}`,
		`{"event":"running","pid":12,"warnings":[]}`, `{}`} {
		sameDecoding(t, []byte(line))
	}
	if _, err := DecodeReport([]byte(`{"event":"exit"`)); err == nil {
		t.Fatal("a cut report decoded")
	}
}

// sameDecoding fails unless DecodeReport and encoding/json agree on line.
func sameDecoding(t *testing.T, line []byte) {
	t.Helper()
	var want Report
	if err := json.Unmarshal(line, &want); err != nil {
		t.Fatalf("encoding/json: %v on %s", err, line)
	}
	got, err := DecodeReport(line)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("DecodeReport(%s) = %+v, %v; encoding/json %+v", line, got, err, want)
	}
}

// FuzzReportRandom: reports and exit records of random values (every
// field, any bytes in the strings, nil and empty lists) encode as
// encoding/json encodes them, and the daemon's decoding of the line agrees
// with encoding/json's.
func FuzzReportRandom(f *testing.F) {
	f.Add([]byte("\x05running\x01\x02\x03\x04\x05\x06\x07\x08\x03\x02w\xff"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var rec ExitRecord
		jsonwiretest.Random(&rec, data)
		want, _ := json.Marshal(rec.Report)
		if got := encode(rec.Report); !bytes.Equal(got, append(want, '\n')) {
			t.Fatalf("encode(%+v)\n got %s\nwant %s", rec.Report, got, want)
		}
		sameDecoding(t, encode(rec.Report))
		want, _ = json.Marshal(rec)
		if got := encodeExitRecord(rec); !bytes.Equal(got, want) {
			t.Fatalf("encodeExitRecord(%+v)\n got %s\nwant %s", rec, got, want)
		}
	})
}
