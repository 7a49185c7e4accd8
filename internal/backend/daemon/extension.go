package daemon

import (
	"context"

	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/supervise"
)

// extension is a personality the daemon hosts beside bpm's jobs: monit's
// (monitext), active where the control files the BOSH agent installs
// exist. At each reload the daemon asks it what runs, lets it configure
// the supervisors, and then puts its load in force, which starts the
// processes it runs itself. The reload methods are called one reload at a
// time, in this order.
type extension interface {
	// Load reads the extension's configuration for a reload, given the bpm
	// processes the jobs define and, by process, those it depends on, and
	// says whether it is active. An active extension decides what runs,
	// starts it (each process once those it depends on have started, after
	// Apply), and persists what operators stop: the daemon's stopped.json
	// is then neither read nor written.
	Load(bpm []supervise.ID, after map[supervise.ID][]supervise.ID) (active bool, problems []control.Problem)
	// Wanted is what runs while it is active: the bpm processes it starts,
	// and by id the programs it runs its own way, each with a text that
	// changes whenever the program's configuration does.
	Wanted() (bpm []supervise.ID, programs map[supervise.ID]string)
	// Configure lays its settings for id onto cfg (a program's runner,
	// probes, a restart limit, an observer of the supervisor's changes)
	// and says whether the supervisor begins unmonitored. It is called for
	// every supervisor the daemon makes, active or not.
	Configure(id supervise.ID, cfg *supervise.Config) (unmonitored bool)
	// Apply puts the load read last in force once the reload's
	// supervisors are in place; what it serves lives until ctx is done.
	// Its error is a problem of the reload.
	Apply(ctx context.Context) error
	// Settled says the reload's own starts have settled (or failed); it
	// returns once the extension has seen them, or ctx is done.
	Settled(ctx context.Context)
	// Stop ends the load in force: none of its actions runs afterwards.
	Stop()
	// Wait returns, once the ctx given to Apply is done, when what it
	// served has ended, with its error.
	Wait() error
}
