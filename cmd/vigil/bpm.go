package main

import (
	"os"

	"github.com/vigil-bosh/vigil/bpmcli"
)

// runBPM is the bpm personality: the binary run under the name "bpm" (the
// symlink vigil install makes), or "vigil bpm ARGS...".
func runBPM(args []string) int {
	self, err := os.Executable()
	if err != nil {
		self = os.Args[0]
	}
	return bpmcli.Main(args, bpmcli.Env{
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		Getenv: os.Getenv, Version: version, Self: self,
	})
}
