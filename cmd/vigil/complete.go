package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/internal/lifecycle"
)

// What a positional argument or a flag's value completes to. Anything
// else is a list of words separated by "|".
const (
	completeJob     = "job"      // the root's jobs
	completeProcess = "process"  // the processes of the job named before
	completeJobProc = "job/proc" // JOB, or JOB/PROC
	completeSignal  = "signal"   // signal names
	completeHook    = "hook"     // lifecycle hooks
	completeCommand = "command"  // vigil's commands
	completeJobAll  = "job|all"  // a job, or all
	completeDir     = "dir"      // directories (the shell completes them)
	completeFile    = "file"     // files (the shell completes them)
)

// The directives __complete prints instead of candidates, for the shell to
// complete paths itself.
const (
	directiveDir  = ":dir"
	directiveFile = ":file"
)

// runComplete is `vigil __complete WORDS... CURRENT`: the candidates for
// CURRENT after WORDS (the command line after "vigil"), one per line, or a
// directive. The completion scripts of every shell ask it, so that they
// follow this binary's command definitions and the root's jobs.
func runComplete(args []string) error {
	if len(args) == 0 {
		args = []string{""}
	}
	for _, c := range completions(args[:len(args)-1], args[len(args)-1], os.Getenv) {
		fmt.Println(c)
	}
	return nil
}

// completions are the candidates for cur after words, those that begin
// with cur (a directive when the shell should complete a path).
func completions(words []string, cur string, getenv func(string) string) []string {
	l, _ := boshpath.Resolve(rootIn(words), getenv, "VIGIL_ROOT")
	for len(words) > 0 && strings.HasPrefix(words[0], "-") { // vigil --root DIR stop ...
		if words[0] == "--root" || words[0] == "-root" {
			if len(words) == 1 {
				return []string{directiveDir} // vigil --root <TAB>
			}
			words = words[1:]
		}
		words = words[1:]
	}
	if len(words) == 0 {
		if strings.HasPrefix(cur, "-") {
			return matching([]string{"--root", "--help", "--version"}, cur)
		}
		return matching(commandWords(), cur)
	}
	s, rest := lookup(words)
	if s == nil {
		var subs []string
		for _, c := range visibleCommands() {
			if first, sub, ok := strings.Cut(c.name, " "); ok && first == words[0] && len(words) == 1 {
				subs = append(subs, sub)
			}
		}
		return matching(subs, cur)
	}
	if s.own != nil || s.hidden {
		return nil
	}
	c := s.defined()
	var pos []string
	for i := 0; i < len(rest); i++ {
		w := rest[i]
		if f, ok := c.flagNamed(w); ok && !f.isBool && !strings.Contains(w, "=") {
			i++ // its value
			if i == len(rest) {
				return candidates(f.complete, l, pos, cur)
			}
			continue
		}
		if !strings.HasPrefix(w, "-") || w == "-" {
			pos = append(pos, w)
		}
	}
	if name, val, ok := strings.Cut(cur, "="); ok && strings.HasPrefix(cur, "-") {
		if f, ok := c.flagNamed(name); ok {
			var out []string
			for _, v := range candidates(f.complete, l, pos, val) {
				if !strings.HasPrefix(v, ":") {
					v = name + "=" + v
				}
				out = append(out, v)
			}
			return out
		}
	}
	if strings.HasPrefix(cur, "-") {
		var names []string
		for _, f := range c.flags {
			for _, n := range f.names {
				names = append(names, map[bool]string{true: "-", false: "--"}[len(n) == 1]+n)
			}
		}
		return matching(append(names, "--help"), cur)
	}
	if len(s.complete) == 0 {
		return nil
	}
	i := min(len(pos), len(s.complete)-1)
	kind := strings.TrimSuffix(s.complete[i], "...")
	if len(pos) >= len(s.complete) && !strings.HasSuffix(s.complete[i], "...") {
		return nil
	}
	return candidates(kind, l, pos, cur)
}

// flagNamed finds the flag a word names ("-p", "--process", "--wait=x").
func (c *command) flagNamed(word string) (flagDef, bool) {
	name, _, _ := strings.Cut(strings.TrimLeft(word, "-"), "=")
	if !strings.HasPrefix(word, "-") || name == "" {
		return flagDef{}, false
	}
	for _, f := range c.flags {
		if slices.Contains(f.names, name) {
			return f, true
		}
	}
	return flagDef{}, false
}

// rootIn finds --root DIR (or --root=DIR) among words.
func rootIn(words []string) string {
	for i, w := range words {
		if (w == "--root" || w == "-root") && i+1 < len(words) {
			return words[i+1]
		}
		if v, ok := strings.CutPrefix(w, "--root="); ok {
			return v
		}
	}
	return ""
}

// candidates completes cur as kind: pos are the positional arguments
// before it (the job, for a process).
func candidates(kind string, l boshpath.Layout, pos []string, cur string) []string {
	switch kind {
	case "":
		return nil
	case completeDir:
		return []string{directiveDir}
	case completeFile:
		return []string{directiveFile}
	case completeJob:
		return matching(jobNames(l), cur)
	case completeJobAll:
		return matching(append(jobNames(l), "all"), cur)
	case completeProcess:
		if len(pos) == 0 || boshpath.CheckName(pos[0]) != nil {
			return nil
		}
		return matching(jobProcesses(l, pos[0]), cur)
	case completeJobProc:
		if job, _, ok := strings.Cut(cur, "/"); ok && boshpath.CheckName(job) == nil {
			var out []string
			for _, p := range jobProcesses(l, job) {
				out = append(out, job+"/"+p)
			}
			return matching(out, cur)
		}
		return matching(jobNames(l), cur)
	case completeSignal:
		return matching(signalNames(), cur)
	case completeHook:
		return matching(lifecycle.Hooks, cur)
	case completeCommand:
		return matching(commandWords(), cur)
	}
	return matching(strings.Split(kind, "|"), cur)
}

// signalNames are the names of the signals 1 to 31, without "SIG".
func signalNames() []string {
	var names []string
	for s := unix.Signal(1); s < 32; s++ {
		if n := unix.SignalName(s); n != "" {
			names = append(names, strings.TrimPrefix(n, "SIG"))
		}
	}
	return names
}

// jobNames are the jobs of l that have a bpm.yml.
func jobNames(l boshpath.Layout) []string {
	matches, _ := filepath.Glob(filepath.Join(l.JobsDir(), "*", "config", "bpm.yml"))
	var out []string
	for _, m := range matches {
		out = append(out, filepath.Base(filepath.Dir(filepath.Dir(m))))
	}
	return out
}

// commandWords are the first words of the visible commands.
func commandWords() []string {
	var out []string
	for _, c := range visibleCommands() {
		first, _, _ := strings.Cut(c.name, " ")
		if !slices.Contains(out, first) {
			out = append(out, first)
		}
	}
	return out
}

func matching(words []string, prefix string) []string {
	var out []string
	for _, w := range words {
		if strings.HasPrefix(w, prefix) {
			out = append(out, w)
		}
	}
	return out
}
