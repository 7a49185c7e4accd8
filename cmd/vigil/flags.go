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
	"github.com/vigil-bosh/vigil/internal/suggest"
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
	// all is --all, when the command has it: its positional argument
	// becomes "all" (see allFlag).
	all *bool
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

// set reports whether the flag name was given on the command line.
func (c *command) set(name string) bool {
	given := false
	c.fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// allFlag defines --all, which stands for the positional argument "all"
// (start --all is start all, as monit's start all).
func (c *command) allFlag(usage string) { c.all = c.Bool("all", usage) }

// Var defines a flag of any flag.Value.
func (c *command) Var(v flag.Value, names, usage string) {
	c.define(names, usage, "", false, func(n string) { c.fs.Var(v, n, usage) })
}

// completes says what the value of the flag defined last completes to.
func (c *command) completes(what string) { c.flags[len(c.flags)-1].complete = what }

// parse parses flags anywhere in args and returns the positional
// arguments; "--" ends the flags. -h or --help is errHelp. A flag that is
// not the command's, a flag without its value and a value its flag
// cannot take are usage errors that say what is wrong and what is
// expected, naming the flag as it was typed.
func (c *command) parse(args []string) ([]string, error) {
	if err := c.checkFlags(args); err != nil {
		return nil, err
	}
	var pos []string
	for {
		err := c.fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			return nil, errHelp
		}
		if err != nil {
			return nil, c.valueError(err)
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

// checkFlags finds, before the flag package does, a flag that is not
// c's ("did you mean" one that is) and a flag whose value is missing.
func (c *command) checkFlags(args []string) error {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return nil
		}
		if len(a) < 2 || a[0] != '-' {
			continue
		}
		typed, _, hasValue := strings.Cut(a, "=")
		name := strings.TrimLeft(typed, "-")
		if name == "h" || name == "help" {
			continue
		}
		f, ok := c.flagNamed(typed)
		if !ok {
			return c.usagef("unknown flag %s%s", typed, suggest.Phrase(typed, c.flagWords(), "flags"))
		}
		if f.isBool || hasValue {
			continue
		}
		if i+1 == len(args) {
			return c.usagef("%s needs a value: %s", typed, flagValueName(f))
		}
		i++ // its value, which may begin with "-"
	}
	return nil
}

// flagWords are c's flags as typed: "-p", "--process", and --help.
func (c *command) flagWords() []string {
	var out []string
	for _, f := range c.flags {
		for _, n := range f.names {
			out = append(out, dashed(n))
		}
	}
	return append(out, "--help")
}

// dashed is a flag's name as help shows it: "-p", "--process".
func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// valueError is the usage error of the flag package's err: a value the
// flag cannot take, said with what it wants ("--timeout 5: want a
// duration such as 5s, 90s or 1m30s").
func (c *command) valueError(err error) error {
	var name, value string
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "invalid value "); ok {
		value, rest, _ = strings.Cut(strings.TrimPrefix(rest, `"`), `" for flag -`)
		name, _, _ = strings.Cut(rest, ":")
	} else if rest, ok := strings.CutPrefix(msg, "invalid boolean value "); ok {
		value, rest, _ = strings.Cut(strings.TrimPrefix(rest, `"`), `" for -`)
		name, _, _ = strings.Cut(rest, ":")
	}
	f, ok := c.flagNamed(dashed(name))
	if !ok {
		return c.usagef("%v", err)
	}
	want := map[string]string{
		"duration": "a duration such as 5s, 90s or 1m30s",
		"int":      "a whole number",
	}[f.kind]
	if f.isBool {
		want = "true or false"
	}
	if want == "" {
		_, cause, _ := strings.Cut(msg, ": ")
		return c.usagef("%s %s: %s", dashed(name), value, cause)
	}
	return c.usagef("%s %s: want %s", dashed(name), value, want)
}

func (c *command) layout() (boshpath.Layout, error) {
	return boshpath.Resolve(c.root, os.Getenv, "VIGIL_ROOT")
}
