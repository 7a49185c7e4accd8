package bpmcli

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

// TestEventLogLines: the lines are lager's pretty JSON byte for byte, with
// sessions numbered as lager numbers them.
func TestEventLogLines(t *testing.T) {
	var b bytes.Buffer
	at := time.Date(2026, 11, 30, 2, 0, 1, 5000, time.FixedZone("CET", 3600))
	log := newEventLog(&b, func() time.Time { return at }, "start", target{job: "web", proc: "server"})
	lock := log.session("acquiring-lifecycle-lock")
	lock.info("starting")
	log.info("starting")
	log.session("start-process").error("failed", errors.New(`exit "1"`))
	want := `{"timestamp":"2026-11-30T01:00:01.000005000Z","level":"info","source":"bpm","message":"bpm.start.acquiring-lifecycle-lock.starting","data":{"job":"web","process":"server","session":"1.1"}}
{"timestamp":"2026-11-30T01:00:01.000005000Z","level":"info","source":"bpm","message":"bpm.start.starting","data":{"job":"web","process":"server","session":"1"}}
{"timestamp":"2026-11-30T01:00:01.000005000Z","level":"error","source":"bpm","message":"bpm.start.start-process.failed","data":{"error":"exit \"1\"","job":"web","process":"server","session":"1.2"}}
`
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}
}
