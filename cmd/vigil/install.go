package main

import (
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/vigil-bosh/vigil/atomicfile"
	"github.com/vigil-bosh/vigil/boshpath"
)

// stemcellUnit is the unit that runs vigil as the stemcell's supervisor
// service (docs/COMPATIBILITY.md, "The stemcell's service").
//
//go:embed vigil.service
var stemcellUnit string

// runInstall lays out ROOT/jobs/bpm/bin/bpm and ROOT/bosh/bin/monit as
// symlinks to this binary, so that scripts and the BOSH agent find bpm and
// monit at their usual paths. Running it again changes nothing;
// a symlink to another binary is replaced, a regular file (a real bpm) only
// with --force.
func runInstall(args []string) error {
	c := newCommand("install")
	force := c.fs.Bool("force", false, "replace a regular file at the bpm path")
	unitDir := c.fs.String("unit-dir", "", "also install vigil.service, the stemcell's supervisor service, into this systemd unit directory")
	pos, err := c.parse(args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError("install takes no arguments")
	}
	l, err := c.layout()
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find own binary: %w", err)
	}
	if self, err = filepath.EvalSymlinks(self); err != nil {
		return fmt.Errorf("find own binary: %w", err)
	}
	for _, link := range []string{filepath.Join(l.JobDir("bpm"), "bin", "bpm"), filepath.Join(l.Root(), "bosh", "bin", "monit")} {
		if err := installLink(link, self, *force); err != nil {
			return err
		}
	}
	if *unitDir != "" {
		return installUnit(*unitDir, self, l.Root())
	}
	return nil
}

// installUnit writes vigil.service into dir, naming this binary and root.
func installUnit(dir, self, root string) error {
	text := strings.Replace(stemcellUnit, "ExecStart=/var/vcap/bosh/bin/vigil daemon --root "+boshpath.DefaultRoot,
		"ExecStart="+self+" daemon --root "+root, 1)
	path := filepath.Join(dir, "vigil.service")
	if err := atomicfile.Write(path, []byte(text), 0o644); err != nil {
		return fmt.Errorf("install: %w", err)
	}
	fmt.Printf("%s (run systemctl daemon-reload)\n", path)
	return nil
}

// installLink makes link a symlink to self (see runInstall).
func installLink(link, self string, force bool) error {
	what := filepath.Base(link)
	switch fi, err := os.Lstat(link); {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("install: %w", err)
	case fi.Mode()&fs.ModeSymlink != 0:
		if target, err := os.Readlink(link); err == nil && target == self {
			fmt.Printf("%s -> %s (already installed)\n", link, self)
			return nil
		}
	case !force:
		return fmt.Errorf("install: %s exists and is not a symlink (a real %s?); use --force to replace it", link, what)
	}
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		return fmt.Errorf("install: %w", err)
	}
	// A new link renamed over the old one: the path never goes missing.
	tmp := fmt.Sprintf("%s.vigil-%d", link, os.Getpid())
	if err := os.Symlink(self, tmp); err != nil {
		return fmt.Errorf("install: %w", err)
	}
	if err := os.Rename(tmp, link); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("install: %w", err)
	}
	fmt.Printf("%s -> %s\n", link, self)
	return nil
}
