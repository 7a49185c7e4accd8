// Command bench runs vigil and its peers (monit, supervisord, runit, s6, daemontools)
// side by side on the same workload and writes a Markdown report.
//
//	go run ./bench [-quick|-full] [-only vigil,monit,...] [-vigil PATH]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// mode holds the sizes and durations of one benchmark depth.
type mode struct {
	Name           string
	Sizes          []int         // growth sizes; the main tables use N=100
	RestartSamples int           // kills at N=100
	GrowthSamples  int           // kills at the other sizes (at most N)
	StartRuns      int           // starts timed at each size, their median reported (a paced supervisor: one)
	StatusRuns     int           // status queries at N=100, back to back
	SpacedRuns     int           // status queries at N=100 and above, spacedGap apart
	Idle           time.Duration // idle CPU window
	Crash          time.Duration // crash-loop window for counting starts
	CrashExtra     time.Duration // further observation to see a give-up
	Grace          time.Duration // leftover grace after stop-all
	IgnoreN        int           // children in the TERM-ignorer stop test
	PacedSizeLanes bool          // run each size of a paced supervisor in its own lane
}

func quickMode() mode {
	return mode{Name: "quick", Sizes: []int{10, 100}, RestartSamples: 20, GrowthSamples: 5, StartRuns: 3,
		StatusRuns: 20, SpacedRuns: 3, Idle: 10 * time.Second, Crash: 10 * time.Second, CrashExtra: 15 * time.Second,
		Grace: 20 * time.Second, IgnoreN: 10, PacedSizeLanes: true}
}

func fullMode() mode {
	return mode{Name: "full", Sizes: []int{10, 100, 1000}, RestartSamples: 50, GrowthSamples: 50, StartRuns: 5,
		StatusRuns: 20, SpacedRuns: 7, Idle: 30 * time.Second, Crash: 30 * time.Second, CrashExtra: 30 * time.Second,
		Grace: 30 * time.Second, IgnoreN: 100}
}

// mainN is the size of the main tables.
const mainN = 100

// harness is one benchmark run.
type harness struct {
	m        mode
	peers    []string
	repo     string // module root
	tmp      string // scratch directory of this run
	child    string // built child binary
	vigilBin string
	res      *results
	log      io.Writer
	began    time.Time
	keep     bool
	// starting is held by each start test from the supervisor's launch
	// until its start is measured, in every lane: a start is a burst of
	// CPU, and two at once on a 2-core machine slow each other (monit's
	// start of 100 takes a fifth of a core for over 20 s).
	starting sync.Mutex
}

func main() {
	quick := flag.Bool("quick", false, "short run (about 3.5 minutes)")
	full := flag.Bool("full", false, "long run with N=1000 (about 22 minutes)")
	only := flag.String("only", "", "comma-separated supervisors to run: "+strings.Join(peerOrder(), ","))
	vigil := flag.String("vigil", "", "vigil binary (default: build ./cmd/vigil)")
	out := flag.String("out", "", "report path (default: bench/results.md in the module)")
	keep := flag.Bool("keep", false, "keep the scratch directories (configs, supervisor logs)")
	flag.Parse()
	if *quick && *full {
		fmt.Fprintln(os.Stderr, "bench: -quick and -full are exclusive")
		os.Exit(2)
	}
	m := quickMode()
	if *full {
		m = fullMode()
	}
	peers, err := selectPeers(*only)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := runBench(ctx, m, peers, *vigil, *out, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// selectPeers parses -only; "supervisord" is accepted for "supervisor".
func selectPeers(only string) ([]string, error) {
	if only == "" {
		return peerOrder(), nil
	}
	want := map[string]bool{}
	for _, p := range strings.Split(only, ",") {
		p = strings.TrimSpace(strings.ToLower(p))
		if p == "supervisord" {
			p = "supervisor"
		}
		if !slices.Contains(peerOrder(), p) {
			return nil, fmt.Errorf("unknown supervisor %q (want %s)", p, strings.Join(peerOrder(), ","))
		}
		want[p] = true
	}
	var out []string
	for _, p := range peerOrder() {
		if want[p] {
			out = append(out, p)
		}
	}
	return out, nil
}

func runBench(ctx context.Context, m mode, peers []string, vigilBin, out string, keep bool) error {
	began := time.Now()
	h := &harness{m: m, log: os.Stderr, res: newResults(), began: began, keep: keep}
	var err error
	if h.repo, err = moduleRoot(); err != nil {
		return err
	}
	if out == "" {
		out = filepath.Join(h.repo, "bench", "results.md")
	}
	if err := becomeSubreaper(); err != nil {
		return err
	}
	if err := ensurePeers(ctx, h.log, peers); err != nil {
		return err
	}
	if h.tmp, err = os.MkdirTemp(scratchBase(), "vigil-bench-"); err != nil {
		return fmt.Errorf("temp dir: %w", err)
	}
	if !keep {
		defer os.RemoveAll(h.tmp)
	}
	if h.child, err = buildChild(ctx, h.repo, h.tmp); err != nil {
		return err
	}
	if slices.ContainsFunc(peers, isVigil) {
		h.vigilBin, err = findVigil(ctx, h.repo, h.tmp, vigilBin)
		if err != nil {
			fmt.Fprintf(h.log, "bench: skipping vigil: %v\n", err)
			h.res.note("vigil skipped: " + err.Error())
			peers = slices.DeleteFunc(peers, isVigil)
		}
	}
	if len(peers) == 0 {
		return fmt.Errorf("no supervisor left to run")
	}
	h.peers = peers
	facts := append(machineFacts(ctx, h.repo, h.vigilBin, peers), [2]string{"scratch", fsName(h.tmp)})
	h.logf("mode %s, supervisors %s, scratch %s", m.Name, strings.Join(peers, ","), h.tmp)
	h.run(ctx)
	reapOrphans()
	elapsed := time.Since(began)
	report := renderReport(h, facts, elapsed, strings.Join(os.Args[1:], " "))
	fmt.Print(report)
	if err := os.WriteFile(out, []byte(report), 0o644); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	h.logf("done in %s; report written to %s", elapsed.Round(time.Second), out)
	return ctx.Err()
}

func (h *harness) logf(format string, args ...any) {
	fmt.Fprintf(h.log, "bench %5.1fs: %s\n", time.Since(h.began).Seconds(), fmt.Sprintf(format, args...))
}
