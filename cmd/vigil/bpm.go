package main

import (
	"os"
	"strings"

	"github.com/vigil-bosh/vigil/internal/bpmcli"
	"github.com/vigil-bosh/vigil/internal/initimage"
)

// runBPM is the bpm personality: the binary run under the name "bpm" (the
// symlink vigil install makes), or "vigil bpm ARGS...". --root DIR, taken
// out of the arguments, overrides BPM_BOSH_ROOT and VIGIL_ROOT; the rest
// is bpm's, with bpm's exit statuses.
func runBPM(args []string) int {
	root, args := takeRoot(args)
	self, err := os.Executable()
	if err != nil {
		self = os.Args[0]
	}
	getenv := os.Getenv
	if root != "" {
		getenv = func(k string) string {
			if k == "BPM_BOSH_ROOT" || k == "VIGIL_ROOT" {
				return root
			}
			return os.Getenv(k)
		}
	}
	var prog *initimage.Program
	defer func() {
		if prog != nil {
			_ = prog.Close()
		}
	}()
	init := func() string { // only bpm start and run start an init
		if prog == nil {
			if p, err := initimage.Resolve(); err == nil {
				prog = p
			} else {
				return self
			}
		}
		return prog.Path
	}
	return bpmcli.Main(args, bpmcli.Env{
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		Getenv: getenv, Version: version, Self: self, Init: init,
	})
}

// runBPMCommand is `vigil bpm`.
func runBPMCommand(args []string) error {
	if code := runBPM(args); code != 0 {
		return &exitError{code: code}
	}
	return nil
}

// takeRoot takes --root DIR (or --root=DIR) out of args, up to a "--",
// and returns the last one given ("" for none) and the other arguments.
func takeRoot(args []string) (root string, rest []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return root, append(rest, args[i:]...)
		case (a == "--root" || a == "-root") && i+1 < len(args):
			root = args[i+1]
			i++
		case strings.HasPrefix(a, "--root="):
			root = strings.TrimPrefix(a, "--root=")
		default:
			rest = append(rest, a)
		}
	}
	return root, rest
}
