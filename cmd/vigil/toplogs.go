package main

import (
	"context"
	"fmt"
	"sync"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/internal/logtail"
)

// topLogKeep is how many lines vigil top's log view keeps.
const topLogKeep = 1000

// topLogs is vigil top's view of one process's logs: the last lines of
// its stdout and stderr, then each line as it is written (the files are
// followed as vigil logs -f follows them, by inotify). Its methods are
// called from vigil top's loop; its followers only send lines.
type topLogs struct {
	job, proc string
	kept      []topLogLine
	lines     chan topLogLine
	cancel    context.CancelFunc
	followers sync.WaitGroup
	err       string // why a file could not be followed
}

type topLogLine struct {
	stderr bool
	text   string
	err    error // following ended with it (text unused)
}

// openTopLogs shows the logs of job/proc and follows them until close.
func openTopLogs(ctx context.Context, l boshpath.Layout, job, proc string) *topLogs {
	ctx, cancel := context.WithCancel(ctx)
	tl := &topLogs{job: job, proc: proc, lines: make(chan topLogLine, 256), cancel: cancel}
	if boshpath.CheckName(job) != nil || boshpath.CheckName(proc) != nil {
		tl.err = "no such process"
		return tl
	}
	for i, path := range []string{l.StdoutLog(job, proc), l.StderrLog(job, proc)} {
		last, end, err := logtail.Tail(path, topLogKeep/2, topLogKeep/2*logsBytesPerLine)
		if err != nil {
			tl.err = err.Error()
			continue
		}
		for _, text := range last {
			tl.add(topLogLine{stderr: i == 1, text: text})
		}
		tl.followers.Go(func() {
			err := logtail.Follow(ctx, path, end, func(text string) error {
				select {
				case tl.lines <- topLogLine{stderr: i == 1, text: text}:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			})
			if err != nil && ctx.Err() == nil {
				select {
				case tl.lines <- topLogLine{err: err}:
				case <-ctx.Done():
				}
			}
		})
	}
	return tl
}

// add keeps one more line (or the error that ended a follower).
func (tl *topLogs) add(l topLogLine) {
	if l.err != nil {
		tl.err = l.err.Error()
		return
	}
	tl.kept = append(tl.kept, l)
	if len(tl.kept) > topLogKeep {
		tl.kept = tl.kept[len(tl.kept)-topLogKeep:]
	}
}

// close ends the followers and waits for them.
func (tl *topLogs) close() {
	tl.cancel()
	tl.followers.Wait()
}

// render lays the newest lines out in width columns and height lines,
// stderr's marked "err" (in red with colour).
func (tl *topLogs) render(width, height int, color bool) []string {
	head := fmt.Sprintf("vigil top: the logs of %s/%s (stdout, and stderr marked err), followed", tl.job, tl.proc)
	lines := []string{escBold + fit(head, width) + escReset}
	room := max(height-3, 1)
	shown := tl.kept[max(0, len(tl.kept)-room):]
	for _, l := range shown {
		if !l.stderr {
			lines = append(lines, fit("    "+l.text, width))
			continue
		}
		mark := "err "
		if color {
			mark = "\x1b[31merr\x1b[0m "
		}
		lines = append(lines, mark+fit(l.text, width-4))
	}
	if len(shown) == 0 {
		lines = append(lines, fit("no lines yet", width))
	}
	for len(lines) < height-2 {
		lines = append(lines, "")
	}
	return append(lines, fit(tl.err, width), escDim+fit("q or esc: back to the table  ctrl-c: quit", width)+escReset)
}
