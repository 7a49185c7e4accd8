package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInstallKeepsWhatItReplaces: install --force keeps a real bpm as
// bpm.before-vigil and a link to another binary likewise; uninstall
// removes vigil's links and puts both back; a second install changes
// nothing and refuses to overwrite a backup.
func TestInstallKeepsWhatItReplaces(t *testing.T) {
	c := newCLI(t)
	bpm := filepath.Join(c.root, "jobs", "bpm", "bin", "bpm")
	monit := filepath.Join(c.root, "bosh", "bin", "monit")
	c.tr.Write(bpm, "#!/bin/sh\necho the real bpm\n", 0o755)
	os.MkdirAll(filepath.Dir(monit), 0o755)
	os.Symlink("/var/vcap/monit/real-monit", monit)

	if out, errs, code := c.runIn("install"); code != 1 || out != "" || !strings.Contains(errs, "exists and is not a symlink (a real bpm?); use --force") {
		t.Fatalf("install over a real bpm: %d %q %q", code, out, errs)
	}
	out, _, code := c.runIn("install", "--force", "--json")
	var done []installed
	if code != 0 || json.Unmarshal([]byte(out), &done) != nil || len(done) != 2 || done[0].Backup != bpm+".before-vigil" || done[1].Backup != monit+".before-vigil" {
		t.Fatalf("install --force: %d %s", code, out)
	}
	if b, _ := os.ReadFile(bpm + ".before-vigil"); string(b) != "#!/bin/sh\necho the real bpm\n" {
		t.Fatalf("the real bpm was not kept: %q", b)
	}
	if target, _ := os.Readlink(monit + ".before-vigil"); target != "/var/vcap/monit/real-monit" {
		t.Fatalf("the old monit link was not kept: %q", target)
	}
	for _, p := range []string{bpm, monit} {
		if target, err := os.Readlink(p); err != nil || target != vigilBin {
			t.Fatalf("%s -> %q %v", p, target, err)
		}
	}
	if out, _, code := c.runIn("install"); code != 0 || strings.Count(out, "(already installed)") != 2 {
		t.Fatalf("install again: %d %q", code, out)
	}
	out, _, code = c.runIn("uninstall")
	if code != 0 || out != "restored "+bpm+" from "+bpm+".before-vigil\nrestored "+monit+" from "+monit+".before-vigil\n" {
		t.Fatalf("uninstall: %d %q", code, out)
	}
	if b, _ := os.ReadFile(bpm); string(b) != "#!/bin/sh\necho the real bpm\n" {
		t.Fatalf("bpm after uninstall: %q", b)
	}
	if target, _ := os.Readlink(monit); target != "/var/vcap/monit/real-monit" {
		t.Fatalf("monit after uninstall: %q", target)
	}
	// With nothing replaced, uninstall only removes the links; it never
	// touches a file that is not a link to vigil.
	os.Remove(monit)
	if _, _, code := c.runIn("install", "--force"); code != 0 {
		t.Fatal("install")
	}
	if out, errs, code := c.runIn("uninstall"); code != 0 || !strings.Contains(out, "removed "+monit+"\n") || errs != "" {
		t.Fatalf("uninstall of a fresh install: %d %q %q", code, out, errs)
	}
	if _, err := os.Lstat(monit); !os.IsNotExist(err) {
		t.Fatalf("the monit link is still there: %v", err)
	}
	if _, errs, code := c.runIn("uninstall"); code != 1 || !strings.Contains(errs, "is not a link to vigil: left alone") {
		t.Fatalf("uninstall over the real bpm: %d %q", code, errs)
	}
}
