package container

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/connlimit"
)

// Live reports whether the daemon answers: the kubelet restarts a container
// only when vigil itself is stuck, never because vigil stopped a process on
// purpose.
func Live(ctx context.Context, m control.Manager) error {
	if _, err := m.Status(ctx); err != nil {
		return fmt.Errorf("not live: %w", err)
	}
	return nil
}

// Ready reports whether every process that is meant to run does, and no
// drain has begun: a process wanted up must be running and ready; one
// stopped on purpose does not count against readiness; a job whose
// configuration does not load is not ready either (it runs nothing). Once the pod's
// termination has begun its drains, it is not ready again.
func Ready(ctx context.Context, m control.Manager) error {
	st, err := m.Status(ctx)
	if err != nil {
		return fmt.Errorf("not ready: %w", err)
	}
	if d := st.Daemon.Drain; d != nil {
		return fmt.Errorf("not ready: %s (the pod is terminating)", d.State)
	}
	var down []string
	for _, p := range st.Problems {
		if p.Severity == "error" && p.Job != "" && !slices.Contains(down, p.Job+"'s configuration has errors") {
			down = append(down, p.Job+"'s configuration has errors")
		}
	}
	for _, p := range st.Processes {
		switch {
		case p.Wanted == "up" && p.State != "running":
			down = append(down, p.Job+"/"+p.Process+" is "+p.State)
		case p.Wanted == "up" && !p.Ready:
			down = append(down, p.Job+"/"+p.Process+" is not ready")
		}
	}
	if len(down) > 0 {
		return errors.New("not ready: " + strings.Join(down, ", "))
	}
	return nil
}

// serveProbes answers GET /livez and /readyz on ln until ctx is done,
// read-only: they change nothing, and say only "ok" or why not in one word
// (the pod's network may reach them; vigil probe has the details), and
// GET /metrics with metrics when it is not nil. The returned channel is
// closed once the server has stopped.
func serveProbes(ctx context.Context, ln net.Listener, m control.Manager, metrics http.Handler) <-chan struct{} {
	probe := func(check func(context.Context, control.Manager) error) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			cctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
			defer cancel()
			if err := check(cctx, m); err != nil {
				http.Error(w, strings.SplitN(err.Error(), ":", 2)[0], http.StatusServiceUnavailable)
				return
			}
			fmt.Fprintln(w, "ok")
		}
	}
	mux := http.NewServeMux()
	mux.Handle("GET /livez", probe(Live))
	mux.Handle("GET /readyz", probe(Ready))
	if metrics != nil {
		mux.Handle("GET /metrics", metrics)
	}
	// Bounded as the daemon's other listeners: connections, headers, idle;
	// and a request is read and answered within 5 s.
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 5 * time.Second,
		WriteTimeout: 5 * time.Second, IdleTimeout: 15 * time.Second, MaxHeaderBytes: 16 << 10}
	ln = connlimit.Listener(ln, connlimit.Defaults())
	done := make(chan struct{})
	stop := context.AfterFunc(ctx, func() { _ = srv.Close() })
	go func() {
		defer close(done)
		defer stop()
		_ = srv.Serve(ln)
	}()
	return done
}
