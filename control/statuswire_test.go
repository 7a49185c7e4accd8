package control

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vigil-bosh/vigil/internal/jsonwire/jsonwiretest"
)

// statusManager answers the status it holds.
type statusManager struct {
	fakeManager
	st Status
}

func (m *statusManager) Status(context.Context) (Status, error) { return m.st, nil }

// statusReply is the body of the server's answer to GET /v1/status when the
// daemon's status is st.
func statusReply(t testing.TB, st Status) []byte {
	t.Helper()
	rec := httptest.NewRecorder()
	newMux(&statusManager{st: st}, serveOptions{}, t.Context()).
		ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/status", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	return rec.Body.Bytes()
}

// daemonStatus is a status as a daemon with n processes reports it: each
// running with its usage, a warning and its output counts; one in four
// with probes, one in five restarted after an exit, one in seven stopping.
func daemonStatus(n int) Status {
	zone := time.FixedZone("CET", 3600)
	started := time.Date(2025, 3, 14, 9, 26, 53, 589793238, zone)
	st := Status{
		Daemon: DaemonInfo{PID: 1042, Version: "1.4.2", Root: "/var/vcap", Backend: "native", Started: started},
		Problems: []Problem{{Severity: "warning", Job: "uaa", File: "/var/vcap/jobs/uaa/config/bpm.yml", Line: 12,
			Field: "processes[0].limits.open_files", Message: "limits.open_files 1048576 exceeds the hard limit 524288"}},
	}
	for i := range n {
		since := started.Add(time.Duration(i) * 1234567 * time.Microsecond)
		p := ProcessStatus{
			Job: fmt.Sprintf("cloud_controller_ng-%d", i/4), Process: fmt.Sprintf("worker_%d", i%4),
			State: "running", Wanted: "running", PID: 20000 + 7*i, ExecPID: 20003 + 7*i, Since: since,
			Warnings: []string{"vigil itself lacks, so cannot grant, the capabilities NET_BIND_SERVICE"},
			Health:   "healthy", Ready: true,
			Usage:  &Usage{CPUSeconds: 12.34 + float64(i)/7, RSSBytes: 48<<20 + int64(i)*4096, OpenFDs: 23 + i%5, Processes: 1 + i%3},
			Output: Output{DroppedStderr: int64(i % 2 * 4096)}, MemoryLimitBytes: 512 << 20,
		}
		if i%4 == 0 {
			p.Probes = []ProbeResult{{Role: "readiness", OK: true, LatencyMS: 1.8 + float64(i)/100, At: since.Add(time.Minute)}}
		}
		if i%5 == 0 {
			p.Restarts = 1
			p.LastExit = &Exit{Code: 1, At: since.Add(-time.Second), Description: "exited with code 1"}
		}
		if i%7 == 0 {
			p.State, p.Wanted, p.Ready, p.Usage = "stopping", "stopped", false, nil
			p.Stop = &StopProgress{Step: StepSignal, Signal: "SIGTERM", Began: since, StepAt: since}
		}
		st.Processes = append(st.Processes, p)
	}
	return st
}

// sameDecoding fails t unless DecodeStatus and encoding/json both take doc
// and read the same status.
func sameDecoding(t *testing.T, doc []byte) {
	t.Helper()
	var want Status
	if err := json.Unmarshal(doc, &want); err != nil {
		t.Fatalf("encoding/json: %v on %s", err, doc)
	}
	got, err := DecodeStatus(doc)
	if err != nil {
		t.Fatalf("DecodeStatus(%s): %v", doc, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("DecodeStatus(%s)\n = %s\nwant %s", doc, marshal(t, got), marshal(t, want))
	}
}

// marshal is st as encoding/json writes it (nested values shown, where %+v
// shows pointers).
func marshal(t testing.TB, st Status) []byte {
	t.Helper()
	doc, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// TestDecodeStatusIsJSON: DecodeStatus reads what encoding/json reads from
// a status with every field set, at every depth, each differently (so that
// a field added to a type and not to DecodeStatus fails), from a daemon's
// reply, from the empty and the null, and from members that are null,
// empty or unknown.
func TestDecodeStatusIsJSON(t *testing.T) {
	var full Status
	jsonwiretest.Fill(&full)
	sameDecoding(t, marshal(t, full))
	sameDecoding(t, statusReply(t, daemonStatus(9)))
	sameDecoding(t, marshal(t, Status{}))
	for _, doc := range []string{`null`, `{}`, ` {"processes":[],"problems":[]} `,
		`{"daemon":null,"processes":null,"problems":null}`, `{"processes":[null,{}],"problems":[null]}`,
		`{"daemon":{"started":null,"drain":{"ended":null,"began":null}}}`, `{"daemon":{"drain":null}}`,
		`{"processes":[{"last_exit":null,"stop":null,"usage":null,"warnings":null,"probes":[null],"output":null,"since":null}]}`,
		`{"processes":[{"warnings":[],"probes":[],"usage":{"cpu_seconds":1e-7,"rss_bytes":null}}]}`,
		`{"future":{"a":[1,"x",{"b":null}]},"daemon":{"pid":1,"new":2.5},"processes":[{"job":"j","x":[]}]}`,
		`{"processes":[{"since":"2024-02-03T04:05:06.123456789+05:30","retry_at":"2024-02-03T04:05:07Z"}]}`,
	} {
		sameDecoding(t, []byte(doc))
	}
}

// TestDecodeStatusRefuses: what encoding/json refuses is an error.
func TestDecodeStatusRefuses(t *testing.T) {
	for _, doc := range []string{``, `[]`, `{"daemon":[]}`, `{"processes":{}}`, `{"processes":[{"pid":"1"}]}`,
		`{"processes":[{"usage":{"cpu_seconds":"1"}}]}`, `{"processes":[{"usage":{"cpu_seconds":1e999}}]}`,
		`{"processes":[{"since":"yesterday"}]}`, `{"processes":[{"since":1}]}`, `{"daemon":{"drain":{"ended":{}}}}`,
		`{"processes":[{"last_exit":[]}]}`, `{"processes":[{"stop":{"began":false}}]}`, `{"problems":[{"line":1.5}]}`,
		`{"processes":[{"probes":[{"latency_ms":-}]}]}`, `{"daemon":{}} {}`, `{"daemon":{}`,
	} {
		var theirs Status
		if err := json.Unmarshal([]byte(doc), &theirs); err == nil {
			t.Fatalf("encoding/json takes %s", doc)
		}
		if st, err := DecodeStatus([]byte(doc)); err == nil {
			t.Errorf("DecodeStatus(%s) = %+v", doc, st)
		}
	}
}

// TestDecodeStatusIsStricter: what the daemon never writes and
// encoding/json takes, DecodeStatus refuses (a key twice) or skips (a key
// that matches a field only when case is ignored).
func TestDecodeStatusIsStricter(t *testing.T) {
	if st, err := DecodeStatus([]byte(`{"daemon":{"pid":1,"pid":2}}`)); err == nil {
		t.Errorf("a key twice: %+v", st)
	}
	if st, err := DecodeStatus([]byte(`{"Daemon":{"PID":1}}`)); err != nil || st.Daemon.PID != 0 {
		t.Errorf("a key in capitals: %+v, %v", st, err)
	}
}

// FuzzStatusRandom: statuses of random values (every field, any bytes in
// the strings, any finite float, times of any zone, nil and empty lists,
// nil pointers), as encoding/json writes them, decode as encoding/json
// decodes them.
func FuzzStatusRandom(f *testing.F) {
	f.Add([]byte("\x03pid\x01\x02\x03\x04\x05\x06\x07\x08\x04\x03\x02\x01\xff\xfe\x00\x7f\x80"))
	f.Add([]byte(strings.Repeat("\x0f<>&\u2028\\\"\xff\x00\x01\x02\x03\x04\x05\x06\x07", 40)))
	f.Fuzz(func(t *testing.T, data []byte) {
		var st Status
		jsonwiretest.Random(&st, data)
		sameDecoding(t, marshal(t, st))
	})
}

// TestClientStatus: the client reads the daemon's status, its drain
// included, as it was sent.
func TestClientStatus(t *testing.T) {
	ended := time.Date(2025, 3, 14, 9, 30, 0, 0, time.UTC)
	m := &statusManager{st: daemonStatus(5)}
	d := &fakeDrainer{st: &DrainState{State: DrainDone, By: "signal", Began: ended.Add(-time.Minute), Ended: &ended}}
	_, c := serve(t, m, WithDrainer(d))
	got, err := c.Status(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	sent := m.st
	sent.Daemon.Drain = d.st
	var want Status
	if err := json.Unmarshal(marshal(t, sent), &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
}

// BenchmarkDecodeStatus decodes a daemon's reply for 100 processes as the
// client did (encoding/json) and does (DecodeStatus).
func BenchmarkDecodeStatus(b *testing.B) {
	doc := statusReply(b, daemonStatus(100))
	for _, bm := range []struct {
		name   string
		decode func([]byte) error
	}{
		{"json.Unmarshal", func(doc []byte) error { var st Status; return json.Unmarshal(doc, &st) }},
		{"DecodeStatus", func(doc []byte) error { _, err := DecodeStatus(doc); return err }},
	} {
		b.Run(bm.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(doc)))
			for b.Loop() {
				if err := bm.decode(doc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
