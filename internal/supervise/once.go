package supervise

import "context"

// Start runs a supervisor for cfg on a goroutine of its own, outside any
// Tree, for one use: a unit's single run (`vigil exec`) or bpm's stop
// without a daemon, so that both go through the same machine as the
// daemon's processes. end ends that goroutine, leaving the process as it
// is, and returns once it has; call it exactly once.
func Start(cfg Config) (s *Supervisor, end func()) {
	s = New(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	go s.Run(ctx)
	return s, func() { cancel(); <-s.Done() }
}
