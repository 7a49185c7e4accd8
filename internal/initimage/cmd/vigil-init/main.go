// Command vigil-init is vigil's per-process init and nothing else: the
// same code as "vigil init" (package procinit), linked without the rest of
// vigil, so that each supervised process pays only for what an init does.
// vigil carries its build (package initimage) and runs it from memory.
package main

import (
	"os"
	"runtime"

	"github.com/vigil-bosh/vigil/internal/launch/procinit"
)

// init locks the main goroutine to the main thread, where package
// initialisation runs, so that the init forks its executable there: the
// thread that lives as long as the process (a child's parent-death signal
// follows the thread that forked it), whose children list is the one
// /proc/PID/task/PID/children shows.
func init() { runtime.LockOSThread() }

func main() { os.Exit(procinit.Main()) }
