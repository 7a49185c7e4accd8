package web

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/vigil-bosh/vigil/internal/logtail"
)

// Bounds of a log follow: the longest line sent whole, the lines held
// for a client that reads slowly (more are skipped, and counted), and the
// lines sent in one event.
const (
	maxViewLine  = 4 << 10
	followBuffer = 512
	followBatch  = 256
)

// logLine is one line as a follow sends it: its stream ("out" or "err"),
// when vigil read it (unix milliseconds: the files keep no times) and its
// text.
type logLine struct {
	stream string
	at     int64
	text   string
}

func (l logLine) MarshalJSON() ([]byte, error) { return json.Marshal([]any{l.stream, l.at, l.text}) }

// tailReply is a follow's first event: the last lines of each stream.
type tailReply struct {
	Streams []logStream `json:"streams"`
}

// follow streams a process's logs as server-sent events: "tail" (JSON:
// the last n lines of stdout and stderr, as the log view shows them),
// then "lines" (JSON: [stream, unix ms, text] for each line written to
// either file since, through logtail.Follow, across rotation and
// truncation), "skipped" (JSON: how many lines a client too slow to read
// them missed) and "failed" (a file can no longer be followed: its
// directory went away). Lines are cut at 4 KiB. It holds one of the
// server's stream slots until the client goes or the server closes.
func (s *Server) follow(w http.ResponseWriter, r *http.Request) {
	job, proc, n, ok := s.logTarget(w, r)
	if !ok {
		return
	}
	e, release, ok := s.openStream(w)
	if !ok {
		return
	}
	defer release()
	ctx, cancel := context.WithCancel(r.Context())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	lines := make(chan logLine, followBuffer)
	failed := make(chan string, 2)
	var skipped atomic.Int64
	var tail tailReply
	for _, f := range s.streamsOf(job, proc) {
		ls := logStream{Name: f.name, Path: f.path}
		got, end, err := logtail.Tail(f.path, n, maxLogBytes)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			end = 0 // followed from its start once it appears
		case err != nil:
			ls.Error = err.Error()
			tail.Streams = append(tail.Streams, ls)
			continue
		}
		ls.Lines = got
		tail.Streams = append(tail.Streams, ls)
		tag := f.name[3:] // "out", "err"
		wg.Go(func() {
			err := logtail.Follow(ctx, f.path, end, func(text string) error {
				select {
				case lines <- logLine{stream: tag, at: time.Now().UnixMilli(), text: cutLine(text)}:
				default:
					skipped.Add(1) // never wait on a slow reader: the writer of the log goes on
				}
				return nil
			})
			if err != nil && ctx.Err() == nil {
				failed <- f.name + ": " + err.Error()
			}
		})
	}
	if b, err := json.Marshal(tail); err == nil {
		e.add("tail", string(b))
	}
	if !e.flush() {
		return
	}
	batch := make([]logLine, 0, followBatch)
	for {
		select {
		case l := <-lines:
			batch = append(batch[:0], l)
			for len(batch) < followBatch && len(lines) > 0 {
				batch = append(batch, <-lines)
			}
			if n := skipped.Swap(0); n > 0 {
				e.add("skipped", jsonNumber(n))
			}
			b, _ := json.Marshal(batch)
			e.add("lines", string(b))
			if !e.flush() {
				return
			}
		case msg := <-failed:
			b, _ := json.Marshal(msg)
			e.add("failed", string(b))
			if !e.flush() {
				return
			}
		case <-ctx.Done():
			return
		case <-s.quit:
			return
		}
	}
}

func jsonNumber(n int64) string { b, _ := json.Marshal(n); return string(b) }

// cutLine shortens a line longer than maxViewLine, on a rune boundary,
// saying how much was cut.
func cutLine(s string) string {
	if len(s) <= maxViewLine {
		return s
	}
	cut := maxViewLine
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + " …[" + jsonNumber(int64(len(s)-cut)) + " more bytes]"
}
