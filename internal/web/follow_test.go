package web

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/vigil-bosh/vigil/internal/testproc"
)

func appendFile(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// followStream opens a process's log stream.
func followStream(t *testing.T, ctx context.Context, base, path string) *eventStream {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", base+path, nil)
	req.SetBasicAuth(testUser, testPassword)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%s: %s %s", path, res.Status, res.Header.Get("Content-Type"))
	}
	return &eventStream{r: bufio.NewReaderSize(res.Body, 1<<20), body: res.Body}
}

// TestFollowBothStreams: a log stream starts with the last lines of both
// files, then sends every line appended to either, tagged with its stream
// and the time it was read, in order, the file's markup as text; a line
// longer than the view takes is cut, saying by how much.
func TestFollowBothStreams(t *testing.T) {
	fb, l := newFake(t)
	out, errs := l.StdoutLog("app", "server"), l.StderrLog("app", "server")
	writeFile(t, out, "one\ntwo\nthree\n")
	_, ts := serve(t, fb, l)
	ctx, cancel := context.WithTimeout(t.Context(), 2*testproc.Guard) // failure guard
	defer cancel()
	es := followStream(t, ctx, ts.URL, "/logs/app/server/stream?n=2")
	name, data, err := es.next()
	var tail tailReply
	if err != nil || name != "tail" || json.Unmarshal([]byte(data), &tail) != nil {
		t.Fatalf("first event %s %s %v", name, data, err)
	}
	if s := tail.Streams; len(s) != 2 || strings.Join(s[0].Lines, ",") != "two,three" || s[0].Path != out ||
		s[1].Name != "stderr" || len(s[1].Lines) != 0 || s[1].Error != "" {
		t.Fatalf("tail %+v", tail)
	}
	before := time.Now().UnixMilli()
	appendFile(t, out, "four <b>\n")
	appendFile(t, errs, "oops\n") // the file appears only now: it is followed from its start
	appendFile(t, out, strings.Repeat("é", maxViewLine)+"\n")
	var got []string
	for len(got) < 3 {
		name, data, err := es.next()
		if err != nil {
			t.Fatal(err)
		}
		if name != "lines" {
			t.Fatalf("event %s %s", name, data)
		}
		var batch [][]any
		if err := json.Unmarshal([]byte(data), &batch); err != nil {
			t.Fatal(err)
		}
		for _, l := range batch {
			if at := int64(l[1].(float64)); at < before || at > time.Now().UnixMilli() {
				t.Errorf("line %v read at %d, not since %d", l, at, before)
			}
			got = append(got, l[0].(string)+":"+l[2].(string))
		}
	}
	// The two files are read apart: only each one's own order holds.
	var outs []string
	for _, g := range got {
		if strings.HasPrefix(g, "out:") {
			outs = append(outs, g)
		}
	}
	if !strings.Contains(strings.Join(got, "\n"), "err:oops") || len(outs) != 2 || outs[0] != "out:four <b>" ||
		!strings.HasSuffix(outs[1], "é …[4096 more bytes]") || len(outs[1]) > maxViewLine+40 {
		t.Fatalf("lines %.200q", got)
	}
}

// TestFollowSkipsForASlowReader: a client that does not read while a
// process writes far more than the stream holds never holds up the
// follower: the lines that do not fit are skipped, and the client is told
// how many once it reads again.
func TestFollowSkipsForASlowReader(t *testing.T) {
	fb, l := newFake(t)
	out := l.StdoutLog("app", "server")
	writeFile(t, out, "")
	_, ts := serve(t, fb, l)
	ctx, cancel := context.WithTimeout(t.Context(), 2*testproc.Guard) // failure guard
	defer cancel()
	es := followStream(t, ctx, ts.URL, "/logs/app/server/stream")
	if name, _, err := es.next(); err != nil || name != "tail" {
		t.Fatalf("first event %s %v", name, err)
	}
	// 64 MiB of lines, written while the client reads nothing: more than
	// the sockets and the stream's buffer hold together.
	line := strings.Repeat("x", 1023) + "\n"
	chunk := strings.Repeat(line, 1024)
	for range 64 {
		appendFile(t, out, chunk)
	}
	// Once the client reads again the stream drains: a line written then
	// fits. One is written at each batch read until one comes through.
	var lines, skipped int
	for {
		name, data, err := es.next()
		if err != nil {
			t.Fatal(err)
		}
		switch name {
		case "skipped":
			var n int
			if err := json.Unmarshal([]byte(data), &n); err != nil || n <= 0 {
				t.Fatalf("skipped %q", data)
			}
			skipped += n
		case "lines":
			var batch [][]any
			if err := json.Unmarshal([]byte(data), &batch); err != nil {
				t.Fatal(err)
			}
			lines += len(batch)
			for _, l := range batch {
				if l[2] == "the end" {
					// Every line before it was sent or counted as skipped.
					if skipped == 0 || lines+skipped < 64*1024+1 {
						t.Fatalf("%d lines and %d skipped, want at least %d in all and some skipped", lines, skipped, 64*1024+1)
					}
					return
				}
			}
			appendFile(t, out, "the end\n")
		}
	}
}
