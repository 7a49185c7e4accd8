//go:build conformance

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// spec is one spec's outcome in one run.
type spec struct {
	Name    string // the containers' texts and the spec's own, joined by " / "
	State   string // ginkgo's: passed, failed, skipped, ...
	Failure string // the failure's message, first line
}

// readReport reads the specs (It nodes) of a ginkgo JSON report.
func readReport(path string) ([]spec, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var suites []struct {
		SpecReports []struct {
			ContainerHierarchyTexts []string
			LeafNodeType            string
			LeafNodeText            string
			State                   string
			Failure                 struct{ Message string }
		}
	}
	if err := json.Unmarshal(b, &suites); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var out []spec
	seen := map[string]int{}
	for _, s := range suites {
		for _, r := range s.SpecReports {
			if r.LeafNodeType != "It" {
				if r.State != "passed" { // a suite node failing fails every spec
					out = append(out, spec{Name: r.LeafNodeType, State: r.State, Failure: firstLine(r.Failure.Message)})
				}
				continue
			}
			name := strings.Join(append(r.ContainerHierarchyTexts, r.LeafNodeText), " / ")
			if seen[name]++; seen[name] > 1 { // two specs of one text: told apart by their order
				name += fmt.Sprintf(" [%d]", seen[name])
			}
			out = append(out, spec{Name: name, State: r.State, Failure: firstLine(r.Failure.Message)})
		}
	}
	return out, nil
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

// count says how many specs passed and failed.
func count(specs []spec) string {
	n := map[string]int{}
	for _, s := range specs {
		n[s.State]++
	}
	return fmt.Sprintf("%d passed, %d failed, %d other, of %d", n["passed"], n["failed"], len(specs)-n["passed"]-n["failed"], len(specs))
}

// results are every run's specs, by target.
type results struct {
	targets []string
	runs    int
	states  map[string]map[string][]string // spec → target → state per run
	fails   map[string]map[string]string   // spec → target → a failure's message
}

func newResults(targets []string, runs int) *results {
	return &results{targets: targets, runs: runs, states: map[string]map[string][]string{}, fails: map[string]map[string]string{}}
}

func (r *results) add(target string, run int, specs []spec) {
	for _, s := range specs {
		if r.states[s.Name] == nil {
			r.states[s.Name] = map[string][]string{}
			r.fails[s.Name] = map[string]string{}
		}
		st := r.states[s.Name][target]
		for len(st) < run-1 {
			st = append(st, "-") // absent from an earlier run
		}
		r.states[s.Name][target] = append(st, s.State)
		if s.Failure != "" {
			r.fails[s.Name][target] = s.Failure
		}
	}
}

// print writes one line a spec (P passed, F failed, - absent, other
// states by their first letter, one a run, a column a target), then each
// failure's message, then the counts a run.
func (r *results) print(w io.Writer) {
	names := make([]string, 0, len(r.states))
	for n := range r.states {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintf(w, "\n%s  spec\n", strings.Join(r.targets, "  "))
	for _, n := range names {
		if r.skipped(n) {
			continue
		}
		var cols []string
		for _, t := range r.targets {
			cols = append(cols, r.column(n, t))
		}
		fmt.Fprintf(w, "%s  %s\n", strings.Join(cols, "  "), n)
		for _, t := range r.targets {
			if f := r.fails[n][t]; f != "" {
				fmt.Fprintf(w, "        %s: %s\n", t, f)
			}
		}
	}
	for _, t := range r.targets {
		for run := 1; run <= r.runs; run++ {
			pass, total := 0, 0
			for _, n := range names {
				if st := r.states[n][t]; run <= len(st) && st[run-1] != "-" && st[run-1] != "skipped" {
					total++
					if st[run-1] == "passed" {
						pass++
					}
				}
			}
			fmt.Fprintf(w, "%s run %d: %d of %d passed\n", t, run, pass, total)
		}
	}
}

// column is a spec's states against one target, a letter a run, padded
// to the target's name.
func (r *results) column(name, target string) string {
	var b strings.Builder
	st := r.states[name][target]
	for run := 0; run < r.runs; run++ {
		switch {
		case run >= len(st) || st[run] == "-":
			b.WriteByte('-')
		case st[run] == "passed":
			b.WriteByte('P')
		case st[run] == "failed":
			b.WriteByte('F')
		default:
			b.WriteString(strings.ToUpper(st[run][:1]))
		}
	}
	return fmt.Sprintf("%-*s", len(target), b.String())
}

// skipped reports whether a spec was skipped in every run (-focus).
func (r *results) skipped(name string) bool {
	for _, st := range r.states[name] {
		for _, s := range st {
			if s != "skipped" && s != "-" {
				return false
			}
		}
	}
	return true
}
