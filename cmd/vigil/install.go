package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/internal/atomicfile"
	"github.com/vigil-bosh/vigil/internal/stemcell"
)

// backupSuffix names what install replaced, beside it, for uninstall.
const backupSuffix = ".before-vigil"

// installed is what install or uninstall did to one path, for --json.
type installed struct {
	Path   string `json:"path"`
	Target string `json:"target,omitempty"` // what the link points to
	Action string `json:"action"`           // linked, unchanged, removed, restored, absent, written (a unit)
	Backup string `json:"backup,omitempty"` // where what was replaced is kept
}

// installPaths are the links install makes: bpm and monit where the BOSH
// agent and job scripts call them.
func installPaths(l boshpath.Layout) []string {
	return []string{filepath.Join(l.JobDir("bpm"), "bin", "bpm"), filepath.Join(l.Root(), "bosh", "bin", "monit")}
}

// defineInstall lays out ROOT/jobs/bpm/bin/bpm and ROOT/bosh/bin/monit as
// symlinks to this binary, so that scripts and the BOSH agent find bpm
// and monit at their usual paths. Running it again changes nothing. What
// it replaces (a symlink to another binary; a regular file, a real bpm,
// only with --force) is renamed to PATH.before-vigil, for uninstall.
func defineInstall(c *command) func([]string) error {
	force := c.Bool("force", "replace a regular file (a real bpm or monit), keeping it as PATH.before-vigil")
	unitDir := c.String("unit-dir", "", "also install the stemcell's units, vigil.service (the jobs) and monit.service (what the agent kills and starts), into this systemd unit `DIR`")
	c.completes(completeDir)
	asJSON := c.Bool("json", "print what was done as JSON")
	return func(pos []string) error {
		l, err := c.layout()
		if err != nil {
			return err
		}
		self, err := ownBinary()
		if err != nil {
			return err
		}
		var done []installed
		for _, link := range installPaths(l) {
			r, err := installLink(link, self, *force)
			if err != nil {
				return err
			}
			done = append(done, r)
		}
		if *unitDir != "" {
			r, err := installUnits(*unitDir, self, l.Root())
			if err != nil {
				return err
			}
			done = append(done, r...)
		}
		return report(done, *asJSON)
	}
}

// installUnits writes the stemcell's units (internal/stemcell) into dir,
// naming this binary and root.
func installUnits(dir, self, root string) ([]installed, error) {
	units, err := stemcell.Render(self, root)
	if err != nil {
		return nil, fmt.Errorf("install: %w", err)
	}
	var done []installed
	for _, u := range units {
		path := filepath.Join(dir, u.Name)
		if err := atomicfile.Write(path, []byte(u.Text), 0o644); err != nil {
			return nil, fmt.Errorf("install: %w", err)
		}
		done = append(done, installed{Path: path, Target: self, Action: "written"})
	}
	return done, nil
}

// defineUninstall undoes install: each link to a vigil binary is removed,
// and what it replaced is put back.
func defineUninstall(c *command) func([]string) error {
	asJSON := c.Bool("json", "print what was done as JSON")
	return func(pos []string) error {
		l, err := c.layout()
		if err != nil {
			return err
		}
		var done []installed
		for _, link := range installPaths(l) {
			r, err := uninstallLink(link)
			if err != nil {
				return err
			}
			done = append(done, r)
		}
		return report(done, *asJSON)
	}
}

func report(done []installed, asJSON bool) error {
	if asJSON {
		return writeJSON(os.Stdout, done)
	}
	for _, r := range done {
		switch r.Action {
		case "linked":
			line := r.Path + " -> " + r.Target
			if r.Backup != "" {
				line += " (what was there is kept as " + r.Backup + ")"
			}
			fmt.Println(line)
		case "unchanged":
			fmt.Printf("%s -> %s (already installed)\n", r.Path, r.Target)
		case "removed":
			fmt.Printf("removed %s\n", r.Path)
		case "restored":
			fmt.Printf("restored %s from %s\n", r.Path, r.Backup)
		case "absent":
			fmt.Printf("%s: not installed\n", r.Path)
		case "written":
			fmt.Printf("%s (run systemctl daemon-reload)\n", r.Path)
		}
	}
	return nil
}

// installLink makes link a symlink to self (see defineInstall).
func installLink(link, self string, force bool) (installed, error) {
	r := installed{Path: link, Target: self, Action: "linked"}
	what := filepath.Base(link)
	switch fi, err := os.Lstat(link); {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return r, fmt.Errorf("install: %w", err)
	case fi.Mode()&fs.ModeSymlink != 0:
		if target, err := os.Readlink(link); err == nil && target == self {
			r.Action = "unchanged"
			return r, nil
		}
		r.Backup = link + backupSuffix
	case !force:
		return r, fmt.Errorf("install: %s exists and is not a symlink (a real %s?); use --force to replace it (it is kept as %s)", link, what, link+backupSuffix)
	default:
		r.Backup = link + backupSuffix
	}
	if r.Backup != "" {
		if _, err := os.Lstat(r.Backup); err == nil {
			return r, fmt.Errorf("install: %s would be replaced, but %s already exists: run vigil uninstall first, or move it away", link, r.Backup)
		}
	}
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		return r, fmt.Errorf("install: %w", err)
	}
	// A new link renamed over the old one: the path never goes missing.
	tmp := fmt.Sprintf("%s.vigil-%d", link, os.Getpid())
	if err := os.Symlink(self, tmp); err != nil {
		return r, fmt.Errorf("install: %w", err)
	}
	if r.Backup != "" {
		if err := os.Link(link, r.Backup); err != nil { // a second name for what is there, kept when the link replaces it
			os.Remove(tmp)
			return r, fmt.Errorf("install: keep %s: %w", link, err)
		}
	}
	if err := os.Rename(tmp, link); err != nil {
		os.Remove(tmp)
		if r.Backup != "" {
			os.Remove(r.Backup)
		}
		return r, fmt.Errorf("install: %w", err)
	}
	return r, nil
}

// uninstallLink removes link when it is a symlink to a vigil binary, and
// puts back what install kept in its place.
func uninstallLink(link string) (installed, error) {
	r := installed{Path: link, Action: "absent"}
	backup := link + backupSuffix
	fi, err := os.Lstat(link)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return r, fmt.Errorf("uninstall: %w", err)
	case fi.Mode()&fs.ModeSymlink == 0:
		return r, fmt.Errorf("uninstall: %s is not a link to vigil: left alone", link)
	default:
		target, _ := os.Readlink(link)
		if !isVigil(target) {
			return r, fmt.Errorf("uninstall: %s links to %s, not to vigil: left alone", link, target)
		}
		r.Target, r.Action = target, "removed"
	}
	if _, err := os.Lstat(backup); err == nil {
		if err := os.Rename(backup, link); err != nil { // over the link: the path never goes missing
			return r, fmt.Errorf("uninstall: restore %s: %w", link, err)
		}
		r.Action, r.Backup = "restored", backup
		return r, nil
	}
	if r.Action == "removed" {
		if err := os.Remove(link); err != nil {
			return r, fmt.Errorf("uninstall: %w", err)
		}
	}
	return r, nil
}

// isVigil reports whether target, a link's target, is a vigil binary: this
// one, or one named vigil.
func isVigil(target string) bool {
	if self, err := ownBinary(); err == nil && target == self {
		return true
	}
	return strings.HasPrefix(filepath.Base(target), "vigil")
}
