package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/job"
	"github.com/vigil-bosh/vigil/logtail"
)

// logsBytesPerLine bounds how much of a file -n lines may read (long lines
// are cut to their ends, see logtail.Last).
const logsBytesPerLine = 16 << 10

// runLogs prints the last lines of a job's log files and, with -f, the
// lines written to them afterwards, until Ctrl-C. Like bpm logs it reads
// the files directly, so it works with or without a daemon; its flags are
// bpm's (-p, -e, -a, -f, -n, -q) plus --stderr. Without -p it shows every
// process of the job. Several files are told apart as tail does, by a
// "==> PATH <==" header before each block of lines from one file.
func runLogs(args []string) error {
	c := newCommand("logs")
	procName := c.fs.String("p", "", "process (default: every process of the job)")
	c.fs.StringVar(procName, "process", "", "same as -p")
	stderr := c.fs.Bool("stderr", false, "show stderr instead of stdout")
	c.fs.BoolVar(stderr, "e", false, "same as --stderr")
	c.fs.BoolVar(stderr, "err", false, "same as --stderr")
	both := c.fs.Bool("a", false, "show stdout and stderr")
	c.fs.BoolVar(both, "all", false, "same as -a")
	follow := c.fs.Bool("f", false, "follow: print new lines as they are written, until interrupted")
	c.fs.BoolVar(follow, "follow", false, "same as -f")
	n := c.fs.Int("n", 25, "number of lines to show first")
	c.fs.IntVar(n, "lines", 25, "same as -n")
	quiet := c.fs.Bool("q", false, "no file headers")
	c.fs.BoolVar(quiet, "quiet", false, "same as -q")
	pos, err := c.parse(args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || *n < 0 {
		return usageError("usage: vigil logs JOB [-p PROC] [-e|--stderr] [-a] [-f] [-n N] [-q]")
	}
	l, err := c.layout()
	if err != nil {
		return err
	}
	paths, err := logPaths(l, pos[0], *procName, !*stderr || *both, *stderr || *both)
	if err != nil {
		return err
	}
	ctx, cancel := interruptible()
	defer cancel()
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	p := &logPrinter{w: out, paths: paths, headers: len(paths) > 1 && !*quiet, current: -1}
	return p.run(ctx, *n, *follow)
}

// logPaths returns the selected log files of job: of the process proc, or
// of every process the job's bpm.yml names (the log files present in the
// job's log directory when it cannot be read). Names are checked, so none
// can reach outside the log directory.
func logPaths(l boshpath.Layout, jobName, proc string, stdout, stderr bool) ([]string, error) {
	if err := boshpath.CheckName(jobName); err != nil {
		return nil, err
	}
	procs := []string{proc}
	if proc == "" {
		procs = jobProcesses(l, jobName)
	}
	var paths []string
	for _, p := range procs {
		if err := boshpath.CheckName(p); err != nil {
			return nil, err
		}
		if stdout {
			paths = append(paths, l.StdoutLog(jobName, p))
		}
		if stderr {
			paths = append(paths, l.StderrLog(jobName, p))
		}
	}
	return paths, nil
}

// jobProcesses names the processes of a job: from its bpm.yml, else from
// the PROC.stdout.log and PROC.stderr.log files in its log directory, else
// bpm's default process, named as the job.
func jobProcesses(l boshpath.Layout, jobName string) []string {
	if j, _, err := job.Load(l, jobName); err == nil && len(j.Processes) > 0 {
		var names []string
		for _, p := range j.Processes {
			names = append(names, p.Name)
		}
		return names
	}
	entries, _ := os.ReadDir(l.LogDir(jobName))
	var names []string
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".stdout.log")
		if !ok {
			name, ok = strings.CutSuffix(e.Name(), ".stderr.log")
		}
		if ok && e.Type().IsRegular() && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return []string{jobName}
	}
	return names
}

// logPrinter writes lines from several files, with a header each time the
// file changes when there is more than one.
type logPrinter struct {
	w       *bufio.Writer
	paths   []string
	headers bool
	current int // the file of the last line written, -1 before any
}

func (p *logPrinter) line(file int, text string) {
	p.header(file)
	p.w.WriteString(text)
	p.w.WriteString("\n")
}

// header starts a block of lines from file, unless the last line came from
// it too.
func (p *logPrinter) header(file int) {
	if p.headers && file != p.current {
		if p.current >= 0 {
			p.w.WriteString("\n")
		}
		fmt.Fprintf(p.w, "==> %s <==\n", p.paths[file])
	}
	p.current = file
}

// run prints the last n lines of each file, then follows them all if asked.
// Missing files are skipped with a note; none at all is bpm's "logs not
// found" (unless following, which waits for them to appear).
func (p *logPrinter) run(ctx context.Context, n int, follow bool) error {
	ends := make([]int64, len(p.paths))
	found := 0
	for i, path := range p.paths {
		lines, end, err := logtail.Tail(path, n, int64(n)*logsBytesPerLine)
		if err != nil {
			return err
		}
		ends[i] = end
		if _, err := os.Lstat(path); err != nil {
			if !follow {
				fmt.Fprintf(os.Stderr, "vigil logs: %s: no such file\n", path)
			}
			continue
		}
		found++
		p.header(i)
		for _, l := range lines {
			p.line(i, l)
		}
	}
	if follow {
		return p.follow(ctx, ends)
	}
	if found == 0 {
		return errors.New("logs not found")
	}
	return nil
}

type followedLine struct {
	file int
	text string
}

// follow prints the lines added to the files from the offsets ends on,
// until ctx is done (Ctrl-C: not an error) or following a file fails.
func (p *logPrinter) follow(ctx context.Context, ends []int64) error {
	var followers sync.WaitGroup
	defer followers.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // the followers end with it (before the wait above)
	lines := make(chan followedLine, 256)
	errs := make(chan error, len(p.paths))
	for i, path := range p.paths {
		followers.Go(func() {
			errs <- logtail.Follow(ctx, path, ends[i], func(s string) error {
				select {
				case lines <- followedLine{i, s}:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			})
		})
	}
	for {
		if err := p.w.Flush(); err != nil {
			return err // stdout closed: nobody reads any more
		}
		select {
		case l := <-lines:
			p.line(l.file, l.text)
			for len(lines) > 0 { // write a burst out at once
				l = <-lines
				p.line(l.file, l.text)
			}
		case err := <-errs:
			if ctx.Err() == nil {
				return err
			}
		case <-ctx.Done():
			return nil
		}
	}
}
