// Package demo runs vigil on the example jobs in a throwaway BOSH root, so
// that a new user sees supervision at work without any setup: it renders
// the examples as a director would, runs the daemon, and shows the status
// until interrupted.
package demo

import (
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/examples"
)

// Root is a rendered demo root.
type Root struct {
	Layout  boshpath.Layout
	WebPort int      // the loopback port the web job listens on
	Web     bool     // the web job is included
	Skipped []string // one line per thing left out, with the reason
}

// Setup renders the example jobs into dir, which must exist and be empty.
// webBinary is the compiled examples/web program; when it is empty or
// missing the web job is left out (and said so in Skipped).
func Setup(dir, webBinary string) (*Root, error) {
	l, err := boshpath.New(dir)
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, fmt.Errorf("pick a port for the web job: %w", err)
	}
	r := &Root{Layout: l, WebPort: port}
	haveWeb := webBinary != ""
	if haveWeb {
		if _, err := os.Stat(webBinary); err != nil {
			haveWeb = false
		}
	}
	r.Web = haveWeb
	if !haveWeb {
		r.Skipped = append(r.Skipped, "web job: build examples/web next to vigil (see README) to include it")
	}
	render := strings.NewReplacer("/var/vcap", l.Root(), "${PORT}", strconv.Itoa(port))
	err = fs.WalkDir(examples.Tree, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !haveWeb && (strings.HasPrefix(p, "jobs/web") || strings.HasPrefix(p, "packages/web")) {
			return nil
		}
		dst := filepath.Join(l.Root(), filepath.FromSlash(p))
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		data, err := fs.ReadFile(examples.Tree, p)
		if err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if path.Base(path.Dir(p)) == "bin" {
			mode = 0o755 // embedding drops modes: everything in a bin/ runs
		}
		return os.WriteFile(dst, []byte(render.Replace(string(data))), mode)
	})
	if err != nil {
		return nil, fmt.Errorf("render examples: %w", err)
	}
	if haveWeb {
		if err := copyFile(webBinary, filepath.Join(l.PackagesDir(), "web", "bin", "web")); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o755)
	if err != nil {
		return fmt.Errorf("copy to %s: %w", dst, err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copy to %s: %w", dst, err)
	}
	return out.Close()
}

// freePort asks the kernel for an unused loopback port.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
