package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"strings"

	"github.com/vigil-bosh/vigil/internal/backend/daemon"
	"github.com/vigil-bosh/vigil/internal/demo"
)

func defineDemo(c *command) func([]string) error {
	keep := c.Bool("keep", "keep the demo root afterwards")
	web := c.String("web", "", "the examples/web `BINARY` (default: \"web\" next to vigil)")
	c.completes(completeFile)
	addr := c.String("http", "127.0.0.1:0", "serve the status page on this loopback `ADDRESS` (port 0: a free one)")
	return func(pos []string) error {
		return demoRun(*keep, *web, *addr)
	}
}

// demoRun runs the demo (see defineDemo).
func demoRun(keep bool, web, addr string) error {
	if web == "" {
		if self, err := os.Executable(); err == nil {
			web = filepath.Join(filepath.Dir(self), "web")
		}
	}
	dir, err := demoDir()
	if err != nil {
		return err
	}
	if !keep {
		defer os.RemoveAll(dir)
	}
	root, err := demo.Setup(dir, web)
	if err != nil {
		return err
	}
	noIsolation := false
	if os.Getuid() != 0 {
		root.Skipped = append(root.Skipped, "isolation (vcap user, namespaces, cgroups) needs root: processes run as you")
	} else if _, err := user.Lookup("vcap"); err != nil {
		noIsolation = true
		root.Skipped = append(root.Skipped, "isolation runs processes as the vcap user, which this machine lacks (useradd vcap): they run as root, unconfined")
	}
	ctx, stop := interruptible()
	defer stop()
	err = demo.Run(ctx, demo.Options{
		Root: root, NoIsolation: noIsolation, Out: os.Stdout, Clear: isTerminal(os.Stdout), Version: vigilVersion(),
		HTTP: addr, Self: selfName(),
		Render: func(w io.Writer, d *daemon.Daemon) {
			st, err := d.Status(context.Background())
			if err != nil {
				fmt.Fprintln(w, err)
				return
			}
			writeStatus(w, st, isTerminal(os.Stdout))
		},
	})
	if keep {
		fmt.Printf("demo root kept at %s\n", dir)
	}
	return err
}

// selfName is how a shell runs this binary again: the path it was
// started by when it has a slash ("bin/vigil", relative to the directory
// the user is in), else "vigil", which PATH found.
func selfName() string {
	if strings.Contains(os.Args[0], "/") {
		return os.Args[0]
	}
	return "vigil"
}

// demoDir makes the throwaway BOSH root. As root, processes are isolated:
// their /tmp is their job's own, so the root must not lie under /tmp, and
// the unprivileged job user must be able to reach its executables.
func demoDir() (string, error) {
	base := ""
	if os.Geteuid() == 0 {
		base = "/run"
	}
	dir, err := os.MkdirTemp(base, "vigil-demo-")
	if err != nil {
		return "", err
	}
	return dir, os.Chmod(dir, 0o755)
}
