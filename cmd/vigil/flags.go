package main

import (
	"errors"
	"flag"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/vigil-bosh/vigil/boshpath"
)

// command is one run of a subcommand: its definition (spec) and its flags,
// parsed so that flags may come before or after the positional arguments,
// as bpm's users write them. The same command, defined but not run, gives
// the help, the completions and the man page.
type command struct {
	spec *spec
	fs   *flag.FlagSet
	root string
	// flags lists the command's flags in the order they were defined,
	// each with its names (short first) and the completion of its value.
	flags []flagDef
}

// flagDef is one flag of a command, under one or more names.
type flagDef struct {
	names    []string // "p", "process"
	usage    string   // the description, with the value's name in back quotes
	isBool   bool
	def      string // the default shown in help, "" for none
	kind     string // the flag package's name for its value's type: "string", "duration", "int", "value"
	complete string // what its value completes to (see completions)
}

func newCommand(s *spec) *command {
	c := &command{spec: s, fs: flag.NewFlagSet("vigil "+s.name, flag.ContinueOnError)}
	c.fs.SetOutput(io.Discard)
	return c
}

// withRoot adds --root, which every command of vigil's own takes.
func (c *command) withRoot() {
	usage := "the BOSH root `DIR` (default $VIGIL_ROOT, else /var/vcap)"
	c.define("root", usage, "", false, func(n string) { c.fs.StringVar(&c.root, n, "", usage) })
	c.completes(completeDir)
}

// define registers one flag under each of names ("p,process") with the
// flag package, through reg, and records it for help and completion.
func (c *command) define(names, usage, def string, isBool bool, reg func(name string)) *flagDef {
	d := flagDef{names: strings.Split(names, ","), usage: usage, isBool: isBool, def: def}
	for _, n := range d.names {
		reg(n)
	}
	if f := c.fs.Lookup(d.names[0]); f != nil {
		d.kind, _ = flag.UnquoteUsage(&flag.Flag{Value: f.Value})
	}
	c.flags = append(c.flags, d)
	return &c.flags[len(c.flags)-1]
}

// String defines a string flag; the value's name goes in back quotes in
// usage ("the process `PROC`").
func (c *command) String(names, def, usage string) *string {
	v := new(string)
	*v = def
	c.define(names, usage, def, false, func(n string) { c.fs.StringVar(v, n, def, usage) })
	return v
}

// Bool defines a boolean flag.
func (c *command) Bool(names, usage string) *bool {
	v := new(bool)
	c.define(names, usage, "", true, func(n string) { c.fs.BoolVar(v, n, false, usage) })
	return v
}

// Int defines an integer flag.
func (c *command) Int(names string, def int, usage string) *int {
	v := new(int)
	*v = def
	shown := ""
	if def != 0 {
		shown = strconv.Itoa(def)
	}
	c.define(names, usage, shown, false, func(n string) { c.fs.IntVar(v, n, def, usage) })
	return v
}

// Duration defines a duration flag.
func (c *command) Duration(names string, def time.Duration, usage string) *time.Duration {
	v := new(time.Duration)
	*v = def
	shown := ""
	if def != 0 {
		shown = def.String()
	}
	c.define(names, usage, shown, false, func(n string) { c.fs.DurationVar(v, n, def, usage) })
	return v
}

// Var defines a flag of any flag.Value.
func (c *command) Var(v flag.Value, names, usage string) {
	c.define(names, usage, "", false, func(n string) { c.fs.Var(v, n, usage) })
}

// completes says what the value of the flag defined last completes to.
func (c *command) completes(what string) { c.flags[len(c.flags)-1].complete = what }

// parse parses flags anywhere in args and returns the positional
// arguments; "--" ends the flags. -h or --help is errHelp.
func (c *command) parse(args []string) ([]string, error) {
	var pos []string
	for {
		err := c.fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			return nil, errHelp
		}
		if err != nil {
			return nil, c.usagef("%v", err)
		}
		rest := c.fs.Args()
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(pos, rest...), nil // everything after "--" is positional
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

func (c *command) layout() (boshpath.Layout, error) {
	return boshpath.Resolve(c.root, os.Getenv, "VIGIL_ROOT")
}
