// Command vigil-init is vigil's per-process init and nothing else: the
// same code as "vigil init" (package procinit), linked without the rest of
// vigil, so that each supervised process pays only for what an init does.
// vigil carries its build (package initimage) and runs it from memory.
package main

import (
	"os"

	"github.com/vigil-bosh/vigil/internal/launch/procinit"
)

func main() { os.Exit(procinit.Main()) }
