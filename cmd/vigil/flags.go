package main

import (
	"flag"
	"io"
	"os"

	"github.com/vigil-bosh/vigil/boshpath"
)

// command is one subcommand's flags, parsed so that flags may come before
// or after the positional arguments, as bpm's users write them.
type command struct {
	fs   *flag.FlagSet
	root string
}

func newCommand(name string) *command {
	c := &command{fs: flag.NewFlagSet("vigil "+name, flag.ContinueOnError)}
	c.fs.SetOutput(io.Discard)
	c.fs.StringVar(&c.root, "root", "", "BOSH root (default $VIGIL_ROOT, else /var/vcap)")
	return c
}

// parse parses flags anywhere in args and returns the positional arguments.
func (c *command) parse(args []string) ([]string, error) {
	var pos []string
	for {
		if err := c.fs.Parse(args); err != nil {
			return nil, usageError("%s: %v", c.fs.Name(), err)
		}
		args = c.fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

func (c *command) layout() (boshpath.Layout, error) {
	return boshpath.Resolve(c.root, os.Getenv, "VIGIL_ROOT")
}
