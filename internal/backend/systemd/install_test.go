package systemd

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestInstallIdempotentAndForeignUnits(t *testing.T) {
	l, jobs := loadJobs(t, "/var/vcap")
	dir := t.TempDir()
	garden := "[Service]\nDelegate=yes\nExecStart=/var/vcap/packages/guardian/bin/gdn\n"
	foreign := map[string]string{
		"garden.service": garden,
		// a foreign file in the way of a generated unit's name
		"vigil-minimal.target": "[Unit]\nDescription=mine\n",
	}
	for name, text := range foreign {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	units := Units(l, jobs, testOptions("/vigil"))
	ch, err := Install(dir, units)
	if err == nil {
		t.Error("no error for the foreign file in the way of vigil-minimal.target")
	}
	if len(ch.Written) != len(units)-1 || slices.Contains(ch.Written, "vigil-minimal.target") {
		t.Errorf("first install wrote %v", ch.Written)
	}

	// Unchanged jobs: unchanged files, byte for byte and untouched.
	past := time.Now().Add(-time.Hour)
	for _, u := range units {
		os.Chtimes(filepath.Join(dir, u.Name), past, past)
	}
	ch, _ = Install(dir, units)
	if ch.Changed() {
		t.Errorf("second install changed %+v", ch)
	}
	for _, u := range units {
		if fi, err := os.Stat(filepath.Join(dir, u.Name)); err == nil && !fi.ModTime().Equal(past) {
			t.Errorf("%s was rewritten", u.Name)
		}
	}

	// A job removed: only its generated units go.
	var rest []Unit
	for _, u := range units {
		if u.Name != "vigil-full-api.service" && u.Name != "vigil-full-sidecar.service" && u.Name != "vigil-full.target" {
			rest = append(rest, u)
		}
	}
	ch, _ = Install(dir, rest)
	if want := []string{"vigil-full-api.service", "vigil-full-sidecar.service", "vigil-full.target"}; !slices.Equal(ch.Removed, want) {
		t.Errorf("removed %v, want %v", ch.Removed, want)
	}
	for name, text := range foreign {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || string(got) != text {
			t.Errorf("foreign unit %s was touched: %q, %v", name, got, err)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".vigil-unit-*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}
