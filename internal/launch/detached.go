package launch

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"sync"
	"time"

	"github.com/vigil-bosh/vigil/internal/launch/procinit"
	"github.com/vigil-bosh/vigil/internal/supervise"
)

// This file holds the two ways bpm starts a process without a daemon:
// bpm start leaves it running under a detached init, bpm run runs it in
// the foreground.

// spawnInit starts a fresh init for the process with stdout and stderr as
// its fds 1 and 2, puts it in its scope (with Options.Scopes), and returns
// it with the launch to send it.
func (r *Runner) spawnInit(ctx context.Context, stdout, stderr *os.File) (*spare, *procinit.Launch, error) {
	launch := r.launch()
	iso, err := r.isolate(launch)
	if err != nil {
		return nil, nil, err
	}
	s, err := startInit(r.opts.Init, r.opts.InitEnv, launch.Label, stdout, stderr, iso.cloneFlags)
	if err != nil {
		_ = iso.group.Remove()
		return nil, nil, err
	}
	if err := r.place(ctx, &iso, launch, s.cmd.Process.Pid); err != nil {
		s.discard()
		return nil, nil, err
	}
	return s, launch, nil
}

// StartDetached starts the process under an init that outlives the caller,
// for bpm start without a daemon: the init writes the pid file itself once
// the executable runs and removes it once everything has ended. It returns
// the init's pid once the executable runs, or the reason it never did. A
// started init is not waited for: whoever inherits it (pid 1 or a
// subreaper) reaps it.
func (r *Runner) StartDetached(ctx context.Context) (int, error) {
	logs, err := r.prepareLogs()
	if err != nil {
		return 0, err
	}
	s, launch, err := r.spawnInit(ctx, logs[0], logs[1])
	closeAll(logs) // the init has its own copies
	if err != nil {
		return 0, err
	}
	defer s.ctrl.Close() // the init carries on alone once we let go
	if err := recordInit(r.opts.Layout.InitRecord(r.p.Job, r.p.Name), s.cmd.Process.Pid, s.cmd.Path); err != nil {
		s.discard()
		return 0, err
	}
	if err := newProcess(s.cmd, s.ctrl, "").send(launch); err != nil {
		s.discard()
		return 0, err
	}
	stop := context.AfterFunc(ctx, func() { s.ctrl.Close() })
	defer stop()
	sc := bufio.NewScanner(s.ctrl)
	for sc.Scan() {
		var rep procinit.Report
		if json.Unmarshal(sc.Bytes(), &rep) != nil {
			continue
		}
		switch rep.Event {
		case procinit.EventRunning:
			pid := s.cmd.Process.Pid
			_ = s.cmd.Process.Release()
			return pid, nil
		case procinit.EventFailed, procinit.EventExit:
			_ = s.cmd.Wait()
			return 0, notStarted(exitFrom(rep, s.cmd.ProcessState))
		}
	}
	if err := ctx.Err(); err != nil {
		return 0, err // the init gives up before the executable, or runs on after it
	}
	_ = s.cmd.Wait()
	return 0, notStarted(exitFrom(procinit.Report{}, s.cmd.ProcessState))
}

// notStarted says why a detached start failed: the init's own words (such
// as "exec PATH: no such file or directory") when it had any.
func notStarted(e supervise.Exit) error {
	if e.Err != "" {
		return errors.New(e.Err)
	}
	return errors.New("the init ended before the executable ran: " + e.String())
}

// StartForeground runs the process as bpm run does: no pid file is
// written, and the output goes both to the log files and to stdout and
// stderr. The returned process reports as Start's do; its exit is reported
// once the output has been copied. Its Signal passes signals on.
func (r *Runner) StartForeground(ctx context.Context, stdout, stderr io.Writer) (supervise.Process, error) {
	logs, err := r.prepareLogs()
	if err != nil {
		return nil, err
	}
	fg := &foreground{events: make(chan supervise.ProcessEvent, 2), logs: logs}
	var ends []*os.File // the init's ends of the output pipes
	for i, w := range []io.Writer{stdout, stderr} {
		pr, pw, err := os.Pipe()
		if err != nil {
			closeAll(append(ends, logs...))
			return nil, err
		}
		ends = append(ends, pw)
		fg.pipes = append(fg.pipes, pr)
		fg.copying.Go(func() { _, _ = io.Copy(tee{logs[i], w}, pr) })
	}
	s, launch, err := r.spawnInit(ctx, ends[0], ends[1])
	closeAll(ends) // the init has its own copies: the copies end with it
	if err != nil {
		fg.finish()
		return nil, err
	}
	launch.Stdout, launch.Stderr = "", "" // the init writes to pipes: nothing to reopen
	launch.PidFile = ""                   // bpm run keeps no pid file
	fg.Process = newProcess(s.cmd, s.ctrl, "")
	if err := fg.send(launch); err != nil {
		_ = s.cmd.Process.Kill() // the init cannot run without its launch
	}
	go fg.watch()
	go fg.relay()
	return fg, nil
}

// foreground is a Process whose output the caller copies (bpm run's tee).
type foreground struct {
	*Process
	events  chan supervise.ProcessEvent
	logs    []*os.File
	pipes   []*os.File
	copying sync.WaitGroup
}

func (f *foreground) Events() <-chan supervise.ProcessEvent { return f.events }

// relay passes the events on, holding the exit back until the output is
// all copied.
func (f *foreground) relay() {
	defer close(f.events)
	for ev := range f.Process.Events() {
		if !ev.Running {
			f.finish()
		}
		f.events <- ev
	}
}

// finish waits for the copies to end (every writer gone) for a few seconds,
// cuts them off if something outside the tree still holds a pipe, and
// closes the files.
func (f *foreground) finish() {
	done := make(chan struct{})
	go func() { f.copying.Wait(); close(done) }()
	t := time.NewTimer(5 * time.Second)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		closeAll(f.pipes)
		<-done
	}
	closeAll(append(f.pipes, f.logs...))
}

// tee writes into the log file and the terminal. A failing terminal never
// stops the log, nor the other way round.
type tee struct {
	log *os.File
	w   io.Writer
}

func (t tee) Write(b []byte) (int, error) {
	_, _ = t.log.Write(b)
	if t.w != nil {
		_, _ = t.w.Write(b)
	}
	return len(b), nil
}

// prepareLogs creates what bpm creates before a start and opens the stdout
// and stderr log files.
func (r *Runner) prepareLogs() ([]*os.File, error) {
	l, p := r.opts.Layout, r.p
	if err := prepare(l, p); err != nil {
		return nil, err
	}
	out, err := procinit.OpenLog(l.StdoutLog(p.Job, p.Name))
	if err != nil {
		return nil, err
	}
	errf, err := procinit.OpenLog(l.StderrLog(p.Job, p.Name))
	if err != nil {
		out.Close()
		return nil, err
	}
	return []*os.File{out, errf}, nil
}

func closeAll(fs []*os.File) {
	for _, f := range fs {
		f.Close()
	}
}
