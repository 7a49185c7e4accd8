// Package monitdiff runs monit control files under a monit daemon, the
// real monit 5.2.5 or vigil installed as monit, and writes down what an
// operator and the BOSH agent see at each step: `monit summary`, `monit
// status`, the `_status2` XML, the output of monit commands, and which
// start, stop and exec programs ran. The differential test runs every
// scenario under vigil and compares with the transcripts recorded from the
// real monit (cmd/monitdiff-record writes them).
//
// Time is the daemon's own: every scenario's first check is a host check
// of a clock the harness serves over HTTP, so each of the daemon's cycles
// begins with a request to the harness. A step waits for a number of those
// requests and holds the last one unanswered while it looks, so the daemon
// is stopped at the start of a cycle whenever the harness reads or changes
// anything. The programs the daemon started before then are not held: a
// step that reads the programs log first waits until each has written its
// line.
package monitdiff

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Scenario is one set of control files and the steps run against them.
type Scenario struct {
	Name  string
	About []string // the comment lines at the top
	Files []File   // paths relative to the root, texts with placeholders
	Steps []Step
	// Differs are vigil's deliberate differences from monit 5.2.5 in this
	// scenario, each with its reason: rewrites of the recorded transcript
	// that the test applies before comparing.
	Differs []Differ
}

// Differ rewrites the lines of the recorded transcript under the headings
// ("## snapshot LABEL", "## monit ARGS", ...) that Section matches: each
// line Re matches is replaced with Repl, or removed when Delete is set.
type Differ struct {
	Reason  string
	Section *regexp.Regexp
	Re      *regexp.Regexp
	Repl    string
	Delete  bool
	// ByService: in these sections the programs block is compared per
	// service (each service's runs in their order, the services in any
	// order), in both transcripts. Once: also, a program that ran again
	// and again counts once. Unordered: in no order at all.
	ByService, Once, Unordered bool
	// Drop removes the programs lines Re matches in these sections, from
	// both transcripts (runs whose number is not the point).
	Drop bool
}

// File is one file the harness writes before the daemon starts.
type File struct {
	Path string
	Mode os.FileMode
	Text string
}

// Step is one line of a scenario's steps.
type Step struct {
	Line int
	Verb string   // ticks, snapshot, monit, kill, sh, listen, unlisten, restart-daemon
	Args []string // the rest of the line, split on blanks (sh: one argument)
}

// The verbs a step may use.
var verbs = map[string]bool{
	"ticks": true, "snapshot": true, "programs": true, "monit": true, "kill": true, "sh": true,
	"listen": true, "unlisten": true, "restart-daemon": true,
}

// Load reads every scenario (*.txt) in dir, sorted by name.
func Load(dir string) ([]*Scenario, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil {
		return nil, fmt.Errorf("list scenarios: %w", err)
	}
	var out []*Scenario
	for _, p := range paths {
		src, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("read scenario: %w", err)
		}
		sc, err := Parse(strings.TrimSuffix(filepath.Base(p), ".txt"), src)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		out = append(out, sc)
	}
	return out, nil
}

// Parse reads a scenario: comment lines (#), then sections headed
// "== file PATH [MODE]" (the text up to the next header) and one
// "== steps" section (a step per line; blank lines and # comments skipped).
func Parse(name string, src []byte) (*Scenario, error) {
	sc := &Scenario{Name: name}
	sec := ""           // "", "file", "steps" or "differs"
	var reason []string // the comment lines above a differ (and the ones after it)
	ruled := false      // a differ came after the last comment
	var text strings.Builder
	flush := func() {
		if sec == "file" {
			sc.Files[len(sc.Files)-1].Text = text.String()
		}
		text.Reset()
	}
	s := bufio.NewScanner(bytes.NewReader(src))
	for n := 1; s.Scan(); n++ {
		l := s.Text()
		if h, ok := strings.CutPrefix(l, "== "); ok {
			flush()
			f := strings.Fields(h)
			switch {
			case len(f) >= 2 && f[0] == "file":
				mode := os.FileMode(0o600)
				if len(f) == 3 {
					m, err := strconv.ParseUint(f[2], 8, 32)
					if err != nil {
						return nil, fmt.Errorf("line %d: bad mode %q", n, f[2])
					}
					mode = os.FileMode(m)
				}
				sc.Files = append(sc.Files, File{Path: f[1], Mode: mode})
				sec = "file"
			case len(f) == 1 && (f[0] == "steps" || f[0] == "differs"):
				sec = f[0]
			default:
				return nil, fmt.Errorf("line %d: unknown section %q", n, h)
			}
			continue
		}
		switch sec {
		case "":
			if c, ok := strings.CutPrefix(l, "#"); ok {
				sc.About = append(sc.About, strings.TrimSpace(c))
			} else if strings.TrimSpace(l) != "" {
				return nil, fmt.Errorf("line %d: text before the first section", n)
			}
		case "file":
			text.WriteString(l + "\n")
		case "differs":
			switch t := strings.TrimSpace(l); {
			case t == "":
			case strings.HasPrefix(t, "#"):
				if ruled {
					reason, ruled = nil, false
				}
				reason = append(reason, strings.TrimSpace(t[1:]))
			default:
				d, err := parseDiffer(n, t, strings.Join(reason, " "))
				if err != nil {
					return nil, err
				}
				sc.Differs, ruled = append(sc.Differs, d), true
			}
		case "steps":
			st, ok, err := parseStep(n, l)
			if err != nil {
				return nil, err
			}
			if ok {
				sc.Steps = append(sc.Steps, st)
			}
		}
	}
	flush()
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("read scenario: %w", err)
	}
	if len(sc.Steps) == 0 {
		return nil, fmt.Errorf("no steps")
	}
	return sc, nil
}

// parseDiffer reads "SECTION-REGEXP :: s|RE|REPL|", "... :: d|RE|" (any
// delimiter after s or d) or "... :: by service".
func parseDiffer(n int, l, reason string) (Differ, error) {
	if reason == "" {
		return Differ{}, fmt.Errorf("line %d: a difference needs its reason in a comment above it", n)
	}
	sect, rule, ok := strings.Cut(l, " :: ")
	if ok && (rule == "by service" || rule == "by service, once" || rule == "unordered") {
		re, err := regexp.Compile(sect)
		if err != nil {
			return Differ{}, fmt.Errorf("line %d: %w", n, err)
		}
		return Differ{Reason: reason, Section: re, ByService: true, Once: rule == "by service, once",
			Unordered: rule == "unordered"}, nil
	}
	if ok && strings.HasPrefix(rule, "drop") && len(rule) > 5 {
		parts := strings.Split(rule[5:], rule[4:5])
		if len(parts) != 2 || parts[1] != "" {
			return Differ{}, fmt.Errorf("line %d: want SECTION :: drop|RE|", n)
		}
		sre, err := regexp.Compile(sect)
		if err != nil {
			return Differ{}, fmt.Errorf("line %d: %w", n, err)
		}
		re, err := regexp.Compile(parts[0])
		if err != nil {
			return Differ{}, fmt.Errorf("line %d: %w", n, err)
		}
		return Differ{Reason: reason, Section: sre, Re: re, Drop: true}, nil
	}
	if !ok || len(rule) < 3 || (rule[0] != 's' && rule[0] != 'd') {
		return Differ{}, fmt.Errorf("line %d: want SECTION :: s|RE|REPL| or SECTION :: d|RE|", n)
	}
	parts := strings.Split(rule[2:], rule[1:2])
	want := 3
	if rule[0] == 'd' {
		want = 2
	}
	if len(parts) != want || parts[len(parts)-1] != "" {
		return Differ{}, fmt.Errorf("line %d: malformed rule %q", n, rule)
	}
	d := Differ{Reason: reason, Delete: rule[0] == 'd'}
	var err error
	if d.Section, err = regexp.Compile(sect); err != nil {
		return Differ{}, fmt.Errorf("line %d: %w", n, err)
	}
	if d.Re, err = regexp.Compile(parts[0]); err != nil {
		return Differ{}, fmt.Errorf("line %d: %w", n, err)
	}
	if !d.Delete {
		d.Repl = parts[1]
	}
	return d, nil
}

// Apply rewrites a recorded transcript with the scenario's differences.
func (sc *Scenario) Apply(recorded string) string {
	if len(sc.Differs) == 0 {
		return recorded
	}
	var out []string
	heading := ""
	for _, l := range strings.Split(recorded, "\n") {
		if h, ok := strings.CutPrefix(l, "## "); ok {
			heading = h
		}
		keep := true
		for _, d := range sc.Differs {
			if d.ByService || d.Drop || !d.Section.MatchString(heading) || !d.Re.MatchString(l) {
				continue
			}
			if d.Delete {
				keep = false
				break
			}
			l = d.Re.ReplaceAllString(l, d.Repl)
		}
		if keep {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// Grouped puts the programs block of each section a "by service" rule
// names in service order (stable: each service's runs keep their order).
func (sc *Scenario) Grouped(transcript string) string {
	lines := strings.Split(transcript, "\n")
	heading := ""
	for i := 0; i < len(lines); i++ {
		if h, ok := strings.CutPrefix(lines[i], "## "); ok {
			heading = h
		}
		grouped, once, unordered := sc.byService(heading)
		drops := sc.drops(heading)
		if lines[i] != "programs:" || (!grouped && len(drops) == 0) {
			continue
		}
		j := i + 1
		for j < len(lines) && strings.HasPrefix(lines[j], "  ") {
			j++
		}
		block := slices.DeleteFunc(slices.Clone(lines[i+1:j]), func(l string) bool {
			return slices.ContainsFunc(drops, func(re *regexp.Regexp) bool { return re.MatchString(l) })
		})
		slices.SortStableFunc(block, func(a, b string) int {
			return strings.Compare(strings.Fields(a)[0], strings.Fields(b)[0])
		})
		if unordered {
			slices.Sort(block)
		}
		if once {
			block = slices.Compact(block)
		}
		if len(block) == 0 { // nothing left: no block, as when nothing ran
			lines = slices.Concat(lines[:i], lines[j:])
			i--
			continue
		}
		lines = slices.Concat(lines[:i+1], block, lines[j:])
		i += len(block)
	}
	return strings.Join(lines, "\n")
}

func (sc *Scenario) drops(heading string) []*regexp.Regexp {
	var out []*regexp.Regexp
	for _, d := range sc.Differs {
		if d.Drop && d.Section.MatchString(heading) {
			out = append(out, d.Re)
		}
	}
	return out
}

func (sc *Scenario) byService(heading string) (grouped, once, unordered bool) {
	for _, d := range sc.Differs {
		if d.ByService && d.Section.MatchString(heading) {
			grouped, once, unordered = true, once || d.Once, unordered || d.Unordered
		}
	}
	return grouped, once, unordered
}

func parseStep(n int, l string) (Step, bool, error) {
	l = strings.TrimSpace(l)
	if l == "" || strings.HasPrefix(l, "#") {
		return Step{}, false, nil
	}
	verb, rest, _ := strings.Cut(l, " ")
	if !verbs[verb] {
		return Step{}, false, fmt.Errorf("line %d: unknown step %q", n, verb)
	}
	st := Step{Line: n, Verb: verb, Args: strings.Fields(rest)}
	switch verb {
	case "sh":
		st.Args = []string{strings.TrimSpace(rest)}
	case "ticks":
		if len(st.Args) != 1 {
			return Step{}, false, fmt.Errorf("line %d: ticks takes a count", n)
		}
		if k, err := strconv.Atoi(st.Args[0]); err != nil || k < 1 {
			return Step{}, false, fmt.Errorf("line %d: bad tick count %q", n, st.Args[0])
		}
	case "kill", "listen", "unlisten":
		if len(st.Args) != 1 {
			return Step{}, false, fmt.Errorf("line %d: %s takes one name", n, verb)
		}
	}
	return st, true, nil
}
