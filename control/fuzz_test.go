package control

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/vigil-bosh/vigil/internal/jsonwire/jsonwiretest"
)

// FuzzRequestDecoding feeds arbitrary bodies to every POST route: the
// server must answer 200 or 400 (never panic, never 5xx) and pass the
// manager only well-formed requests.
func FuzzRequestDecoding(f *testing.F) {
	for _, s := range []string{
		`{"action":"start","job":"web","process":"server"}`,
		`{"action":"stop","job":"web"}`,
		`{"job":"web","process":"server","signal":"HUP"}`,
		`{"action":"start","job":"../../etc"}`,
		`{"action":"start","job":"web"} trailing`,
		`{"action":1}`, `[]`, `null`, ``, `{`, "\x00", `{"job":"` + strings.Repeat("a", 5000) + `"}`,
	} {
		for _, path := range []string{"/v1/action", "/v1/signal", "/v1/reload"} {
			f.Add(path, s)
		}
	}
	m := &fakeManager{}
	mux := newMux(m, serveOptions{}, context.Background())
	f.Fuzz(func(t *testing.T, path, body string) {
		if path != "/v1/action" && path != "/v1/signal" && path != "/v1/reload" {
			return
		}
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		switch rec.Code {
		case http.StatusOK, http.StatusBadRequest, http.StatusNotFound, http.StatusConflict:
		default:
			b, _ := io.ReadAll(rec.Body)
			t.Fatalf("%s %q: status %d: %s", path, body, rec.Code, b)
		}
	})
}

// FuzzDecodeStatus: on any input DecodeStatus ends with a status or an
// error, never a panic, and agrees with encoding/json: both refuse the
// input, or both take it and read the same status. The exception is a
// lenient document (see jsonwiretest.Lenient), which the daemon never
// writes: a key twice, which DecodeStatus refuses, or a key that matches
// a field only when case is ignored, which it skips.
func FuzzDecodeStatus(f *testing.F) {
	var full Status
	jsonwiretest.Fill(&full)
	seed, _ := json.Marshal(full)
	f.Add(seed)
	f.Add(statusReply(f, daemonStatus(3)))
	for _, s := range []string{`null`, `{"processes":[null,{"usage":null,"probes":[],"warnings":["a",null]}]}`,
		`{"daemon":{"drain":{"ended":null,"began":"2025-03-14T09:26:53.5+01:00"}},"x":[1.5e3,{}]}`,
		`{"processes":[{"since":"2024-02-30T00:00:00Z","usage":{"cpu_seconds":1e400}}]}`,
		`{"Processes":[],"daemon":{"Pid":"x"}}`, `{"daemon":{},"daemon":{}}`, `{"problems":[{"line":-0}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		ours, errOurs := DecodeStatus(doc)
		var theirs Status
		errTheirs := json.Unmarshal(doc, &theirs)
		if jsonwiretest.Lenient(doc, &theirs) {
			return
		}
		if (errOurs == nil) != (errTheirs == nil) || errOurs == nil && !reflect.DeepEqual(ours, theirs) {
			t.Fatalf("%q\n ours   %s (%v)\n theirs %s (%v)", doc, marshal(t, ours), errOurs, marshal(t, theirs), errTheirs)
		}
	})
}
