package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/vigil-bosh/vigil/boshpath"
)

// The hooks BOSH runs around a deploy, in the order of a stop and a start.
var Hooks = []string{"pre-stop", "post-stop", "pre-start", "post-start", "post-deploy"}

// HookOptions configure RunHook.
type HookOptions struct {
	Layout  boshpath.Layout
	Hook    string        // one of Hooks
	Env     []string      // added to every script's environment (pre-stop's BOSH_*_NEXT_STATE)
	Timeout time.Duration // per script; zero means none (as the agent)
	Jobs    []string      // only these jobs; empty means every job with the script
}

// Result is how one job's script went.
type Result struct {
	Job      string
	Err      error // nil on success; wraps ErrTimedOut when it was ended
	Duration time.Duration
	// For a drain, the last call's answer (its standard output, trimmed,
	// at most maxOutput bytes) and how it ended ("exit status 1", "signal:
	// terminated"; "" when the budget ended between two calls).
	Output string
	Exit   string
}

// Report is the outcome of one hook or drain over all jobs, in job order.
type Report struct {
	Name    string
	Results []Result
}

// Err returns nil when every script succeeded, else the agent's summary
// ("N of M NAME scripts failed. Failed Jobs: a, b. Successful Jobs: c.")
// followed by one line per failure saying why, which names a hung job.
func (r Report) Err() error {
	var failed, ok, why []string
	for _, res := range r.Results {
		if res.Err == nil {
			ok = append(ok, res.Job)
			continue
		}
		failed = append(failed, res.Job)
		why = append(why, fmt.Sprintf("%s: %v", res.Job, res.Err))
	}
	if len(failed) == 0 {
		return nil
	}
	return errors.New(fmt.Sprintf("%d of %d %s scripts failed. Failed Jobs: %s. Successful Jobs: %s.",
		len(failed), len(r.Results), r.Name, strings.Join(failed, ", "), strings.Join(ok, ", ")) +
		"\n" + strings.Join(why, "\n"))
}

// RunHook runs ROOT/jobs/*/bin/HOOK of every job that has it, all at once,
// and waits for all of them. A script past its timeout is ended (TERM, then
// KILL) and reported as timed out.
func RunHook(ctx context.Context, o HookOptions) (Report, error) {
	if !isHook(o.Hook) {
		return Report{}, fmt.Errorf("unknown hook %q (want one of %s)", o.Hook, strings.Join(Hooks, ", "))
	}
	jobs, err := jobsWith(o.Layout, o.Hook, o.Jobs)
	if err != nil {
		return Report{}, err
	}
	rep := Report{Name: o.Hook, Results: make([]Result, len(jobs))}
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Go(func() {
			sctx, cancel := ctx, context.CancelFunc(func() {})
			if o.Timeout > 0 {
				sctx, cancel = context.WithTimeoutCause(ctx, o.Timeout,
					fmt.Errorf("%s of job %s ran longer than %s", o.Hook, j, o.Timeout))
			}
			defer cancel()
			start := time.Now()
			_, err := script{layout: o.Layout, job: j, name: o.Hook, env: o.Env}.run(sctx)
			rep.Results[i] = Result{Job: j, Err: err, Duration: time.Since(start)}
		})
	}
	wg.Wait()
	return rep, nil
}

func isHook(name string) bool {
	for _, h := range Hooks {
		if h == name {
			return true
		}
	}
	return false
}
