// Command vigil supervises the processes of BOSH jobs: it reads each job's
// bpm.yml, runs and restarts the processes, and answers on a local control
// socket. See the README for the commands, or run vigil help.
package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/vigil-bosh/vigil/internal/launch/procinit"
	"github.com/vigil-bosh/vigil/internal/suggest"
)

// version is vigil's release, stamped at build time with
// -ldflags "-X main.version=V" (the BOSH release's packaging does); empty
// in a development build. The control API reports it.
var version string

// vigilVersion is version, or "dev" for a development build.
func vigilVersion() string {
	if version == "" {
		return "dev"
	}
	return version
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "init" {
		os.Exit(procinit.Main()) // the per-process init: see package procinit
	}
	if filepath.Base(os.Args[0]) == "bpm" {
		os.Exit(runBPM(os.Args[1:])) // the bpm personality: see package bpmcli
	}
	if filepath.Base(os.Args[0]) == "monit" {
		os.Exit(runMonit(os.Args[1:])) // the monit personality: see package monit
	}
	s, err := run(os.Args[1:])
	if err == nil {
		return
	}
	notFound := exitNotFound
	if s != nil && s.gives(exitUnknown) {
		notFound = exitUnknown
	}
	code, msg := statusOf(err, notFound)
	if msg != "" {
		fmt.Fprintln(os.Stderr, msg)
	}
	os.Exit(code)
}

// run runs one command line (without the program name) and returns the
// command it named (nil when none) and its error.
func run(args []string) (*spec, error) {
	if len(args) == 0 {
		writeCommandList(os.Stderr)
		return nil, &exitError{code: exitUsage}
	}
	moved := 0 // the words of a leading --root moved to the end
	if root, rest := takeRoot(args[:min(2, len(args))]); root != "" && len(rest) == 0 {
		args, moved = append(args[2:], "--root", root), 2 // vigil --root DIR COMMAND ...: the command's flag
	} else if strings.HasPrefix(args[0], "--root=") {
		args, moved = append(args[1:], args[0]), 1
	}
	if len(args) == 0 {
		writeCommandList(os.Stderr)
		return nil, &exitError{code: exitUsage}
	}
	switch args[0] {
	case "-h", "--help":
		writeCommandList(os.Stdout)
		return nil, nil
	case "--version", "-V":
		args, moved = []string{"version"}, 0
	}
	s, rest := lookup(args)
	if s != nil && s.noRoot && moved > 0 {
		rest = rest[:len(rest)-moved] // vigil --root DIR version: a root it does not read
	}
	if s == nil {
		for _, c := range visibleCommands() {
			if first, _, ok := strings.Cut(c.name, " "); ok && first == args[0] {
				return nil, &exitError{code: exitUsage, bare: true,
					err: fmt.Errorf("vigil %s: needs a subcommand\nusage: %s", first, c.synopsis())}
			}
		}
		return nil, &exitError{code: exitUsage, bare: true,
			err: fmt.Errorf("vigil: unknown command %q%s\nRun 'vigil help' for the commands.", args[0], suggest.Phrase(args[0], commandWords(), "commands"))}
	}
	return s, s.run(rest)
}

// lookup finds the command args name ("systemd generate" takes two
// words) and returns it with the rest of args.
func lookup(args []string) (*spec, []string) {
	cmds := commands()
	for i := range cmds {
		s := &cmds[i]
		n := 1
		if len(args) > 1 && s.name == args[0]+" "+args[1] {
			n = 2
		} else if s.name != args[0] {
			continue
		}
		return s, args[n:]
	}
	return nil, args
}

// run runs s with its arguments: its own parser, or its flags parsed and
// its positional arguments handed to what define returned. -h or --help
// prints its help instead.
func (s *spec) run(args []string) error {
	if s.own != nil {
		return s.own(args)
	}
	c := newCommand(s)
	runner := s.define(c)
	if !s.noRoot {
		c.withRoot()
	}
	pos, err := c.parse(args)
	if err == errHelp {
		writeHelp(os.Stdout, c)
		return nil
	}
	if err != nil {
		return err
	}
	if c.all != nil && *c.all {
		if len(pos) > 0 {
			return c.usagef("--all names every job: give it or %s, not both", pos[0])
		}
		pos = []string{"all"}
	}
	if min, max := s.argCount(); len(pos) < min {
		return c.usagef("needs %s", s.args)
	} else if len(pos) > max && max == 0 {
		return c.usagef("takes no arguments, got %q", pos)
	} else if len(pos) > max {
		return c.usagef("too many arguments: %q (wants %s)", pos, s.args)
	}
	return runner(pos)
}

// argCount is how many positional arguments the synopsis allows: each
// word is one, one in brackets is optional, "..." repeats.
func (s *spec) argCount() (min, max int) {
	for _, w := range strings.Fields(s.args) {
		switch {
		case strings.HasSuffix(w, "...") || strings.HasSuffix(w, "...]"):
			if !strings.HasPrefix(w, "[") {
				min++
			}
			return min, math.MaxInt
		case strings.HasPrefix(w, "["):
			max++
		default:
			min++
			max++
		}
	}
	return min, max
}

// defined returns the command s defines, with its flags, without running
// it (for help, completion and the man page).
func (s *spec) defined() *command {
	c := newCommand(s)
	if s.define != nil {
		s.define(c)
		if !s.noRoot {
			c.withRoot()
		}
	}
	return c
}
