package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/internal/logtail"
	"github.com/vigil-bosh/vigil/internal/suggest"
	"github.com/vigil-bosh/vigil/job"
)

// logsBytesPerLine bounds how much of a file -n lines may read (long lines
// are cut to their ends, see logtail.Last).
const logsBytesPerLine = 16 << 10

// defineLogs prints the last lines of a job's log files and, with -f, the
// lines written to them afterwards, until Ctrl-C. Like bpm logs it reads
// the files directly, so it works with or without a daemon; its flags are
// bpm's (-p, -e, -a, -f, -n, -q) plus --stderr, --prefix and --json.
// Without -p it shows every process of the job. Several files are told
// apart as tail does, by a "==> PATH <==" header before each block of
// lines from one file; when following (or with --prefix), by a
// "JOB/PROC | " prefix on every line instead.
func defineLogs(c *command) func([]string) error {
	procName := c.String("p,process", "", "only the process `PROC` (default: every process of the job)")
	c.completes(completeProcess)
	stderr := c.Bool("e,err,stderr", "show stderr instead of stdout")
	both := c.Bool("a,all", "show stdout and stderr")
	follow := c.Bool("f,follow", "follow: print new lines as they are written, until interrupted")
	n := c.Int("n,lines", 25, "number of lines to show first")
	quiet := c.Bool("q,quiet", "no file headers or line prefixes")
	prefix := c.Bool("prefix", "prefix every line with JOB/PROC (the default when following several files)")
	asJSON := c.Bool("json", "print one JSON object per line: job, process, stream, line")
	since := c.String("since", "", "only lines written since `TIME`: a duration ago (10m, 2h) or a time (15:04, 15:04:05, 2006-01-02 15:04, RFC 3339); judged by each line's time stamp (logs.timestamps), else by the file's modification time; without -n, every such line")
	grep := c.String("g,grep", "", "only lines that match `REGEXP` (Go's syntax; case-insensitive unless it has a capital letter); without -n, the last 25 that match")
	return func(pos []string) error {
		if *n < 0 {
			return c.usagef("-n must not be negative")
		}
		f := lineFilter{}
		var err error
		if *since != "" {
			if f.since, err = parseSince(*since, time.Now()); err != nil {
				return c.usagef("--since %s: %v", *since, err)
			}
		}
		if *grep != "" {
			expr := *grep
			if strings.ToLower(expr) == expr {
				expr = "(?i)" + expr // smart case, as journalctl's --grep
			}
			if f.re, err = regexp.Compile(expr); err != nil {
				return c.usagef("--grep %s: %v", *grep, err)
			}
		}
		lines := *n
		if !c.set("n") && !f.since.IsZero() {
			lines = filterLines // every line since then, up to this many
		}
		l, err := c.layout()
		if err != nil {
			return err
		}
		files, err := logFiles(l, pos[0], *procName, !*stderr || *both, *stderr || *both)
		if err != nil {
			return exitWith(exitUnknown, err)
		}
		ctx, cancel := interruptible()
		defer cancel()
		out := bufio.NewWriter(os.Stdout)
		defer out.Flush()
		p := &logPrinter{w: out, files: files, current: -1, filter: f}
		switch {
		case *asJSON:
			p.json = json.NewEncoder(out)
		case *quiet:
		case *prefix || (*follow && len(files) > 1):
			p.prefixes = true
		default:
			p.headers = len(files) > 1
		}
		return p.run(ctx, lines, *follow)
	}
}

// logFile is one log file of a process.
type logFile struct {
	path, job, proc, stream string
}

// label is the prefix of the file's lines: "web/a", or with both streams
// shown "web/a err".
func (f logFile) label(both bool) string {
	if both {
		return f.job + "/" + f.proc + " " + map[string]string{"stdout": "out", "stderr": "err"}[f.stream]
	}
	return f.job + "/" + f.proc
}

// logFiles returns the selected log files of job: of the process proc, or
// of every process the job's bpm.yml names (the log files present in the
// job's log directory when it cannot be read). Names are checked, so none
// can reach outside the log directory.
func logFiles(l boshpath.Layout, jobName, proc string, stdout, stderr bool) ([]logFile, error) {
	if err := boshpath.CheckName(jobName); err != nil {
		return nil, err
	}
	if !exists(l.BPMConfig(jobName)) && !exists(l.LogDir(jobName)) {
		return nil, fmt.Errorf("no job %s: neither %s nor %s exists%s", jobName, l.BPMConfig(jobName), l.LogDir(jobName),
			suggest.Phrase(jobName, logJobs(l), "jobs"))
	}
	if proc != "" {
		if err := boshpath.CheckName(proc); err != nil {
			return nil, err
		}
	}
	procs := []string{proc}
	if proc == "" {
		procs = jobProcesses(l, jobName)
	} else if known := jobProcesses(l, jobName); !slices.Contains(known, proc) &&
		!exists(l.StdoutLog(jobName, proc)) && !exists(l.StderrLog(jobName, proc)) {
		return nil, fmt.Errorf("no process %s in job %s: neither its bpm.yml nor its log files name it%s", proc, jobName,
			suggest.Phrase(proc, known, "processes of "+jobName))
	}
	var files []logFile
	for _, p := range procs {
		if err := boshpath.CheckName(p); err != nil {
			return nil, err
		}
		if stdout {
			files = append(files, logFile{l.StdoutLog(jobName, p), jobName, p, "stdout"})
		}
		if stderr {
			files = append(files, logFile{l.StderrLog(jobName, p), jobName, p, "stderr"})
		}
	}
	return files, nil
}

// logJobs are the jobs that have a bpm.yml or a log directory.
func logJobs(l boshpath.Layout) []string {
	names := jobNames(l)
	entries, _ := os.ReadDir(l.LogDir(""))
	for _, e := range entries {
		if e.IsDir() && !slices.Contains(names, e.Name()) {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	return names
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

// logPrinter writes lines from several files: with a header each time the
// file changes, or a prefix on every line, or as JSON.
type logPrinter struct {
	w        *bufio.Writer
	files    []logFile
	headers  bool          // "==> PATH <==" before each block
	prefixes bool          // "JOB/PROC | " before each line
	json     *json.Encoder // one object per line, when set
	current  int           // the file of the last line written, -1 before any
	filter   lineFilter    // --since and --grep
}

func (p *logPrinter) line(file int, text string) {
	f := p.files[file]
	switch {
	case p.json != nil:
		_ = p.json.Encode(struct {
			Job     string `json:"job"`
			Process string `json:"process"`
			Stream  string `json:"stream"`
			Line    string `json:"line"`
		}{f.job, f.proc, f.stream, text})
		return
	case p.prefixes:
		p.w.WriteString(f.label(p.bothStreams()) + " | ")
	default:
		p.header(file)
	}
	p.w.WriteString(text)
	p.w.WriteString("\n")
}

// bothStreams reports whether stdout and stderr files are both shown.
func (p *logPrinter) bothStreams() bool {
	return slices.ContainsFunc(p.files, func(f logFile) bool { return f.stream == "stderr" }) &&
		slices.ContainsFunc(p.files, func(f logFile) bool { return f.stream == "stdout" })
}

// header starts a block of lines from file, unless the last line came from
// it too.
func (p *logPrinter) header(file int) {
	if p.headers && file != p.current {
		if p.current >= 0 {
			p.w.WriteString("\n")
		}
		fmt.Fprintf(p.w, "==> %s <==\n", p.files[file].path)
	}
	p.current = file
}

// run prints the last n lines of each file, then follows them all if asked.
// Missing files are skipped with a note; none at all is bpm's "logs not
// found" (unless following, which waits for them to appear).
func (p *logPrinter) run(ctx context.Context, n int, follow bool) error {
	ends := make([]int64, len(p.files))
	found := 0
	for i, f := range p.files {
		path := f.path
		lines, end, err := p.filter.tail(path, n)
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
		if !p.prefixes && p.json == nil {
			p.header(i)
		}
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

// followed writes a line read while following, if it passes --grep (it
// is newer than --since).
func (p *logPrinter) followed(l followedLine) {
	if p.filter.re == nil || p.filter.re.MatchString(l.text) {
		p.line(l.file, l.text)
	}
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
	errs := make(chan error, len(p.files))
	for i, f := range p.files {
		followers.Go(func() {
			errs <- logtail.Follow(ctx, f.path, ends[i], func(s string) error {
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
			p.followed(l)
			for len(lines) > 0 { // write a burst out at once
				p.followed(<-lines)
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
