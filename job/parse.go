package job

import (
	"bytes"
	"cmp"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"go.yaml.in/yaml/v3"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/internal/suggest"
)

// Parse parses and validates bpm.yml content for job name; path is only used
// in messages. It touches no file: see Load for the executable check. It
// returns the job, warnings (never fatal) and, when the content is invalid, a
// nil job and an ErrorList holding every problem found, ordered by line.
func Parse(l boshpath.Layout, name, path string, data []byte) (*Job, []Warning, error) {
	j, warns, errs := parse(l, name, path, data)
	if len(errs) > 0 {
		return nil, warns, errs
	}
	return j, warns, nil
}

// parse is Parse that also returns the partly decoded job when there are
// errors, so that Load can check the executables that are there.
func parse(l boshpath.Layout, name, path string, data []byte) (*Job, []Warning, ErrorList) {
	c := newCollector(path, map[string]int{})
	j := &Job{Name: name, ConfigPath: l.BPMConfig(name)}
	if err := checkJobName(name); err != nil {
		c.fail(0, "", err, "invalid job name: %v", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		line, msg := syntaxError(err)
		c.fail(syntaxLine(data, line, msg), "", err, "%s", msg)
		return j, c.warns, c.errs
	}
	if len(doc.Content) > 0 {
		decodeMap(c, doc.Content[0], "", jobKeys, j)
	}
	for i := range j.Processes {
		setDefaults(l, name, &j.Processes[i])
	}
	if len(j.Processes) == 0 {
		noProcesses(c, &doc)
	}
	checkJob(c, l, j)
	sortByLine(c.errs)
	slices.SortStableFunc(c.warns, func(a, b Warning) int { return cmp.Compare(a.Line, b.Line) })
	return j, c.warns, c.errs
}

// sortByLine orders errs by line, keeping the order of errors on one line.
func sortByLine(errs ErrorList) {
	slices.SortStableFunc(errs, func(a, b *ConfigError) int { return cmp.Compare(a.Line, b.Line) })
}

// setDefaults fills in what bpm fills in: the job, the working directory and
// the shutdown signal; and the executable's path when no PATH lookup is needed.
func setDefaults(l boshpath.Layout, job string, p *Process) {
	p.Job = job
	if p.Workdir == "" {
		p.Workdir = l.JobDir(job)
	}
	if p.ShutdownSignal == 0 {
		p.ShutdownSignal = syscall.SIGTERM
	}
	switch {
	case filepath.IsAbs(p.Executable):
		p.ResolvedExecutable = p.Executable
	case strings.Contains(p.Executable, "/"):
		p.ResolvedExecutable = filepath.Join(p.Workdir, p.Executable)
	}
}

// noProcesses reports a job without processes: bpm accepts one (it runs
// nothing), so that is a warning, but a key one slip away from
// "processes" where there is none is an error, so that a typo does not
// pass vigil check.
func noProcesses(c *collector, doc *yaml.Node) {
	if len(doc.Content) > 0 && doc.Content[0].Kind == yaml.MappingNode {
		if _, present := c.lines["processes"]; !present {
			keys := doc.Content[0].Content
			for i := 0; i+1 < len(keys); i += 2 {
				if _, ok := suggest.Closest(keys[i].Value, []string{"processes"}); ok {
					c.fail(keys[i].Line, "processes", nil, "missing, so the job runs nothing: %q is not a key of bpm.yml (did you mean \"processes\"?)", keys[i].Value)
					return
				}
			}
		}
	}
	c.warn(lineOf(c.lines, "processes"), "processes", "no processes: nothing to run")
}

// syntaxLine is the line of a YAML syntax error: the first line whose
// inclusion makes the text fail to parse with the same message. yaml.v3
// names the line where the failing token or collection began, counted
// from 0 for the parser's errors (one early), and for a scanner's error
// the line of the token before the problem (a tab that breaks the
// indentation is reported on the line above it). Files longer than
// maxScan lines keep yaml.v3's line.
func syntaxLine(data []byte, reported int, msg string) int {
	const maxScan = 2000
	lines := bytes.SplitAfter(data, []byte("\n"))
	if len(lines) > maxScan {
		return reported
	}
	var doc yaml.Node
	for n := 1; n <= len(lines); n++ {
		err := yaml.Unmarshal(bytes.Join(lines[:n], nil), &doc)
		if err == nil {
			continue
		}
		if _, m := syntaxError(err); m == msg {
			return n
		}
	}
	return reported
}

// syntaxError splits a yaml.v3 error into its line (0 if it has none) and
// the rest of its text.
func syntaxError(err error) (int, string) {
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "yaml: line "); ok {
		if n, text, ok := strings.Cut(rest, ": "); ok && digits(n) {
			line, _ := strconv.Atoi(n)
			return line, text
		}
	}
	msg = strings.TrimPrefix(msg, "yaml: ")
	if strings.HasPrefix(msg, "unknown anchor '") {
		// The name is what followed a '*', perhaps an unquoted secret.
		return 0, "unknown anchor referenced (a value that starts with * is an alias: quote it)"
	}
	return 0, msg
}
