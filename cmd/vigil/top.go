package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/control"
)

// defineTop is vigil top: every process, live, in the terminal. It reads
// the status once, then again at each event the daemon streams (states,
// exits, restarts come the moment they happen) and once a second for the
// CPU and memory figures, which change without an event: the daemon
// answers those reads from its one /proc pass a second, so a reader costs
// it a cached answer. No other polling.
func defineTop(c *command) func([]string) error {
	return func(pos []string) error {
		l, err := c.layout()
		if err != nil {
			return err
		}
		client := control.NewClient(l.ControlSocket())
		st, err := client.Status(context.Background())
		if err != nil {
			return err
		}
		err = withTerminal(os.Stdin, os.Stdout, func(t *terminal) error {
			return (&topLoop{t: t, client: client, layout: l,
				view: topView{color: os.Getenv("NO_COLOR") == ""}}).run(st)
		})
		if errors.Is(err, errNotTerminal) {
			return fmt.Errorf("top: %w (vigil status prints the table)", err)
		}
		return err
	}
}

// The modes of vigil top: the table, typing a filter, a question before
// a stop or restart, a process's logs.
const (
	modeTable = iota
	modeFilter
	modeConfirm
	modeLogs
)

// topLoop is one run of vigil top. Everything it draws and decides
// happens on the goroutine of run (so that a panic there passes through
// withTerminal's restore); other goroutines only feed it channels.
type topLoop struct {
	t      *terminal
	client *control.Client
	layout boshpath.Layout
	view   topView
	mode   int
	ask    control.ActionRequest // what modeConfirm asks about
	logs   *topLogs              // in modeLogs

	fetching, pending bool // a status read is under way; another is wanted after it
	statuses          chan statusRead
	results           chan string // the outcome of each action
}

type statusRead struct {
	st  control.Status
	at  time.Time
	err error
}

// run draws st and then each change until q, Ctrl-C, SIGTERM, SIGINT or
// SIGHUP (nil), or the daemon goes away (an error).
func (tl *topLoop) run(st control.Status) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGWINCH)
	defer signal.Stop(sigs)
	events, err := tl.client.Events(ctx, 0)
	if err != nil {
		return err
	}
	keys := make(chan []string, 16)
	go readKeys(tl.t.in, keys)
	tl.statuses, tl.results = make(chan statusRead, 1), make(chan string, 8)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	tl.view.update(st, time.Now())
	defer func() {
		if tl.logs != nil {
			tl.logs.close()
		}
	}()
	for {
		tl.draw()
		var logLines <-chan topLogLine
		if tl.logs != nil {
			logLines = tl.logs.lines
		}
		select {
		case ks, ok := <-keys:
			if !ok {
				return nil // the terminal went away
			}
			for _, k := range ks {
				if tl.key(ctx, k) {
					return nil
				}
			}
		case ev, ok := <-events:
			if !ok {
				return errors.New("the daemon went away")
			}
			if ev.Kind != control.EventAction {
				tl.refresh(ctx)
			}
		case r := <-tl.statuses:
			tl.fetching = false
			if r.err == nil {
				tl.view.update(r.st, r.at)
			}
			if tl.pending {
				tl.pending = false
				tl.refresh(ctx)
			}
		case msg := <-tl.results:
			tl.view.message = msg
		case l := <-logLines:
			tl.logs.add(l)
		case <-tick.C:
			tl.refresh(ctx) // CPU and memory change without an event
		case s := <-sigs:
			if s != syscall.SIGWINCH {
				return nil
			}
		}
	}
}

// refresh reads the status again, once at a time: asked while a read is
// under way, it reads once more after it.
func (tl *topLoop) refresh(ctx context.Context) {
	if tl.fetching {
		tl.pending = true
		return
	}
	tl.fetching = true
	go func() {
		st, err := tl.client.Status(ctx)
		tl.statuses <- statusRead{st, time.Now(), err}
	}()
}

// draw writes the whole screen in one write: each line cleared to its
// end, the rest of the screen cleared below.
func (tl *topLoop) draw() {
	w, h := tl.t.size()
	var lines []string
	if tl.mode == modeLogs {
		lines = tl.logs.render(w, h, tl.view.color)
	} else {
		lines = tl.view.render(w, h, time.Now())
	}
	tl.t.out.WriteString(escHome + strings.Join(lines, escClearLine+"\r\n") + escClearLine + escClearBelow)
}

// key handles one key; it reports whether vigil top ends.
func (tl *topLoop) key(ctx context.Context, k string) (quit bool) {
	v := &tl.view
	switch tl.mode {
	case modeFilter:
		switch k {
		case keyEnter:
			tl.mode, v.message = modeTable, ""
		case keyEscape, keyCtrlC:
			tl.mode, v.filter, v.message = modeTable, "", ""
		case keyBack:
			if v.filter != "" {
				v.filter = v.filter[:len(v.filter)-1]
			}
		default:
			if len(k) == 1 {
				v.filter += k
			}
		}
		if tl.mode == modeFilter {
			v.message = "filter: " + v.filter + "_   (enter: keep, esc: clear)"
		}
		v.move(0)
		return false
	case modeConfirm:
		tl.mode = modeTable
		if k == "y" || k == "Y" {
			tl.act(ctx, tl.ask)
		} else {
			v.message = tl.ask.Action + " cancelled"
		}
		return false
	case modeLogs:
		switch k {
		case "q", keyEscape, "l", keyEnter:
			tl.logs.close()
			tl.logs, tl.mode = nil, modeTable
		case keyCtrlC:
			return true
		}
		return false
	}
	return tl.tableKey(ctx, k)
}

// tableKey handles a key of the table.
func (tl *topLoop) tableKey(ctx context.Context, k string) (quit bool) {
	v := &tl.view
	_, h := tl.t.size()
	switch k {
	case "q", keyCtrlC:
		return true
	case keyUp, "k":
		v.move(-1)
	case keyDown, "j":
		v.move(1)
	case keyPageUp:
		v.move(-(h - 5))
	case keyPageDown:
		v.move(h - 5)
	case keyHome, "g":
		v.move(-len(v.st.Processes))
	case keyEnd, "G":
		v.move(len(v.st.Processes))
	case "o":
		v.sort = (v.sort + 1) % len(topSorts())
	case "/":
		tl.mode, v.message = modeFilter, "filter: "+v.filter+"_   (enter: keep, esc: clear)"
	case keyEscape:
		v.filter, v.message = "", ""
	case "s", "S", "x", "X", "r", "R":
		p, ok := v.selected()
		if !ok {
			return false
		}
		req := control.ActionRequest{Action: map[string]string{"s": control.ActionStart, "x": control.ActionStop,
			"r": control.ActionRestart}[strings.ToLower(k)], Job: p.Job, Process: p.Process}
		if k == strings.ToUpper(k) {
			req.Process = "" // the whole job
		}
		if req.Action == control.ActionStart {
			tl.act(ctx, req)
			return false
		}
		tl.mode, tl.ask = modeConfirm, req
		v.message = fmt.Sprintf("%s %s? y: yes, any other key: no", req.Action, target(req))
	case "l", keyEnter:
		if p, ok := v.selected(); ok {
			tl.logs, tl.mode = openTopLogs(ctx, tl.layout, p.Job, p.Process), modeLogs
		}
	}
	return false
}

// act sends req without waiting for it; its outcome comes back as the
// message line, while the events show its progress in the table.
func (tl *topLoop) act(ctx context.Context, req control.ActionRequest) {
	tl.view.message = req.Action + " " + target(req) + "..."
	go func() {
		_, err := tl.client.Action(ctx, req)
		msg := req.Action + " " + target(req) + ": done"
		if err != nil {
			msg = req.Action + " " + target(req) + ": " + err.Error()
		}
		select {
		case tl.results <- msg:
		case <-ctx.Done():
		}
	}()
}

func target(req control.ActionRequest) string {
	if req.Process == "" {
		return req.Job
	}
	return req.Job + "/" + req.Process
}

// readKeys reads the terminal until it fails, sending the keys of each
// read; it closes keys at the end.
func readKeys(in *os.File, keys chan<- []string) {
	defer close(keys)
	buf := make([]byte, 256)
	for {
		n, err := in.Read(buf)
		if n > 0 {
			if ks := decodeKeys(buf[:n]); len(ks) > 0 {
				keys <- ks
			}
		}
		if err != nil {
			return
		}
	}
}
