package control

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
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
