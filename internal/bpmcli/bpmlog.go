package bpmcli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"time"

	"github.com/vigil-bosh/vigil/internal/launch/procinit"
)

// This file writes bpm's own log, ROOT/sys/log/JOB/bpm.log, which log
// forwarders ship: start, stop and run each append one JSON line per step
// in the format of lager's "pretty" sink, which bpm uses:
//
//	{"timestamp":"2026-11-30T02:00:01.123456789Z","level":"info","source":"bpm",
//	 "message":"bpm.start.starting","data":{"job":"web","process":"web","session":"1"}}
//
// message is "bpm.COMMAND[.SUBSESSION].ACTION"; session numbers a command's
// run "1" and its sub-sessions "1.1", "1.2" ... in the order they begin, as
// lager numbers them; an error line has level "error" and the error's text
// in data.error. data's keys are sorted (lager marshals a map).

// lagerTime is lager's timestamp layout: UTC, always nine fractional digits.
const lagerTime = "2006-01-02T15:04:05.000000000Z07:00"

// eventLog is one lager session of bpm.log. It never fails: like lager, a
// write error loses the line and nothing else.
type eventLog struct {
	w    io.Writer
	now  func() time.Time
	task string // "bpm.start", "bpm.start.acquiring-lifecycle-lock"
	id   string // "1", "1.1"
	data map[string]string
	subs *int // sub-sessions begun so far
}

// newEventLog is the session of command (start, stop, run) for t, writing
// to w.
func newEventLog(w io.Writer, now func() time.Time, command string, t target) *eventLog {
	return &eventLog{w: w, now: now, task: "bpm." + command, id: "1",
		data: map[string]string{"job": t.job, "process": t.proc}, subs: new(int)}
}

// session begins a sub-session named task, numbered after the ones before.
func (e *eventLog) session(task string) *eventLog {
	*e.subs++
	return &eventLog{w: e.w, now: e.now, task: e.task + "." + task,
		id: e.id + "." + strconv.Itoa(*e.subs), data: e.data, subs: new(int)}
}

func (e *eventLog) info(action string) { e.write("info", action, nil) }

func (e *eventLog) error(action string, err error) { e.write("error", action, err) }

func (e *eventLog) write(level, action string, err error) {
	data := map[string]string{"session": e.id}
	for k, v := range e.data {
		data[k] = v
	}
	if err != nil {
		data["error"] = err.Error()
	}
	line, _ := json.Marshal(struct {
		Timestamp string            `json:"timestamp"`
		Level     string            `json:"level"`
		Source    string            `json:"source"`
		Message   string            `json:"message"`
		Data      map[string]string `json:"data"`
	}{e.now().UTC().Format(lagerTime), level, "bpm", e.task + "." + action, data})
	_, _ = e.w.Write(append(line, '\n'))
}

// openEventLog opens t's bpm.log for command as bpm does before taking the
// lock: the log directory is created (0750), the file is appended to
// (created 0600) and never through a symlink ("refusing to open symlink
// at PATH", which fails the command), and, as root, owned by vcap when
// that user exists. The caller closes the returned file.
func (c *cli) openEventLog(t target, command string) (*eventLog, *os.File, error) {
	dir := c.layout.LogDir(t.job)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, nil, fmt.Errorf("create log directory: %w", err)
	}
	f, err := procinit.OpenLog(filepath.Join(dir, "bpm.log"))
	if err != nil {
		return nil, nil, err
	}
	if os.Geteuid() == 0 {
		if u, err := user.Lookup("vcap"); err == nil {
			uid, _ := strconv.Atoi(u.Uid)
			gid, _ := strconv.Atoi(u.Gid)
			if err := f.Chown(uid, gid); err != nil {
				f.Close()
				return nil, nil, fmt.Errorf("chown %s: %w", f.Name(), err)
			}
		}
	}
	return newEventLog(f, time.Now, command, t), f, nil
}

// begin opens t's bpm.log for command and takes the lifecycle lock, both
// logged as bpm logs them, then logs the command's start. The caller
// closes the returned lock (releasing it, logged, and closing the log)
// after logging "complete".
func (c *cli) begin(t target, command string) (*eventLog, *heldLock, error) {
	log, f, err := c.openEventLog(t, command)
	if err != nil {
		return nil, nil, err
	}
	acq := log.session("acquiring-lifecycle-lock")
	acq.info("starting")
	lock, err := c.lock(t)
	if err != nil {
		acq.error("failed-to-acquire-lock", err)
		f.Close()
		return nil, nil, err
	}
	acq.info("complete")
	log.info("starting")
	return log, &heldLock{lock: lock, file: f, log: log}, nil
}

// heldLock is a held lifecycle lock with the open bpm.log it is logged to.
type heldLock struct {
	lock, file *os.File
	log        *eventLog
}

// Close releases the lock, logging it, then closes bpm.log.
func (h *heldLock) Close() error {
	rel := h.log.session("releasing-lifecycle-lock")
	rel.info("starting")
	err := h.lock.Close()
	rel.info("complete")
	h.file.Close()
	return err
}
