package demo

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/backend/daemon"
	"github.com/vigil-bosh/vigil/internal/history"
	"github.com/vigil-bosh/vigil/internal/metrics"
	"github.com/vigil-bosh/vigil/internal/web"
)

// Options configure Run.
type Options struct {
	Root    *Root
	Out     io.Writer // where the status goes
	Clear   bool      // redraw in place (a terminal)
	Version string
	// NoIsolation runs the processes unconfined (as root without a vcap
	// user, say; the caller tells why in Root.Skipped).
	NoIsolation bool
	// Render draws a status screen; the caller's table printer.
	Render func(w io.Writer, d *daemon.Daemon)
	// HTTP is the page's address ("" for a free loopback port); it must
	// be a loopback address.
	HTTP string
	// Self is how the hints name vigil so that they run as printed: the
	// path it was started by ("bin/vigil"), or "vigil" when PATH found it.
	Self string
}

// Run supervises the demo root until ctx is done, redrawing the status at
// every change and once a second (for the uptimes), then stops every
// process and returns.
func Run(ctx context.Context, o Options) error {
	l := o.Root.Layout
	if err := os.MkdirAll(l.VigilLogDir(), 0o755); err != nil {
		return err
	}
	logPath := filepath.Join(l.VigilLogDir(), "vigil.log")
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	log := slog.New(slog.NewTextHandler(logf, nil))
	m := metrics.New()
	d, err := daemon.New(daemon.Config{Layout: l, Version: o.Version, Log: log, NoIsolation: o.NoIsolation,
		ControlOptions: []control.ServeOption{control.WithRequestObserver(m.ObserveRequest)}})
	if err != nil {
		return err
	}
	// The status page and /metrics, on a free loopback port, with generated
	// credentials; they outlive the daemon's shutdown (deferred first, so
	// they end last).
	hist := history.New(history.Config{})
	addr := o.HTTP
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	page, err := web.Open(web.Config{Backend: d, Metrics: m.Handler(d), History: hist, Layout: l, Log: log}, addr, false, "")
	if err != nil {
		return err
	}
	pageCtx, stopPage := context.WithCancel(context.Background())
	pageDone, followed, sampled := make(chan error, 1), make(chan error, 1), make(chan struct{})
	go func() { pageDone <- page.Serve(pageCtx) }()
	go func() { followed <- m.Follow(pageCtx, d) }()
	go func() { hist.Run(pageCtx, d); close(sampled) }()
	defer func() { stopPage(); <-pageDone; <-followed; <-sampled }()
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(runCtx) }()
	defer func() { stop(); <-done }()

	// No frame before the daemon has started the jobs: until then every
	// process would read "stopped".
	fmt.Fprintf(o.Out, "vigil demo: starting the example jobs under %s...\n", l.Root())
	select {
	case <-d.Ready():
	case err := <-done:
		done <- err
		return err
	case <-ctx.Done():
		stop()
		err := <-done
		done <- err
		return err
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		changed := d.Changes()
		draw(o, d, logPath, page)
		select {
		case <-changed:
		case <-tick.C:
		case err := <-done:
			done <- err // for the deferred wait
			return err
		case <-ctx.Done():
			fmt.Fprintln(o.Out, "\nstopping every process (each through its stop ladder)...")
			stop()
			err := <-done
			done <- err
			return err
		}
	}
}

func draw(o Options, d *daemon.Daemon, logPath string, page *web.Page) {
	if o.Clear {
		fmt.Fprint(o.Out, "\x1b[H\x1b[2J")
	}
	l := o.Root.Layout
	fmt.Fprintf(o.Out, "vigil demo: supervising the example jobs under %s\n\n", l.Root())
	o.Render(o.Out, d)
	fmt.Fprintln(o.Out)
	for _, s := range o.Root.Skipped {
		fmt.Fprintln(o.Out, "skipped:", s)
	}
	if o.Root.Web {
		fmt.Fprintf(o.Out, "web:        curl http://127.0.0.1:%d/\n", o.Root.WebPort)
	}
	self := o.Self
	if self == "" {
		self = "vigil"
	}
	fmt.Fprintf(o.Out, "page:       %s   (user:password in %s)\n", page.URL(), page.CredentialsFile)
	fmt.Fprintf(o.Out, "try:        %s top --root %s\n", self, l.Root())
	fmt.Fprintf(o.Out, "            %s status --root %s\n", self, l.Root())
	fmt.Fprintf(o.Out, "            kill -9 $(pgrep -P $(cat %s))   # watch it come back\n", l.PidFile("worker", "worker"))
	fmt.Fprintf(o.Out, "logs:       %s, %s\n", l.LogDir("worker"), logPath)
	fmt.Fprintln(o.Out, "Ctrl-C stops every process and ends the demo.")
}
