package web

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseCredentials(t *testing.T) {
	tests := []struct {
		name, text string
		want       []Credential
		err        string
	}{
		{"plain", "admin:secret\n", []Credential{{"admin", "secret"}}, ""},
		{"monit style, comments, blanks", "# users\n\nallow admin:secret\n  ops:a:b:c  \r\n", []Credential{{"admin", "secret"}, {"ops", "a:b:c"}}, ""},
		{"no colon", "# x\nadmin secret\n", nil, "f:2: want user:password, found no ':'"},
		{"empty user", ":secret", nil, "f:1: user is empty"},
		{"empty password", "\n\nadmin:", nil, "f:3: password of admin is empty"},
		{"space in user", "ad min:x", nil, `f:1: user "ad min" holds whitespace`},
		{"control in password", "admin:a\x00b", nil, "f:1: password of admin holds a control character"},
		{"duplicate", "a:1\nb:2\na:3\n", nil, "f:3: user a already given on line 1"},
		{"nothing", "# only a comment\n\n", nil, "f: no user:password line"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseCredentials("f", []byte(tt.text))
			if tt.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %v %v, want %v", got, err, tt.want)
			}
		})
	}
}

func FuzzParseCredentials(f *testing.F) {
	for _, s := range []string{"admin:secret\n", "allow a:b\n# c\n", "a:1\na:2", ":", "a b:c", "x:\x7f", "\n\n\n:\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		creds, err := ParseCredentials("creds", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "creds:") {
				t.Fatalf("error without the file name: %v", err)
			}
			return
		}
		seen := map[string]bool{}
		for _, c := range creds {
			if c.User == "" || c.Password == "" || strings.ContainsAny(c.User, ": \t\n\r") || seen[c.User] {
				t.Fatalf("accepted %q from %q", c, data)
			}
			seen[c.User] = true
		}
		c, err := newChecker(creds)
		if err != nil || !c.check(creds[0].User, creds[0].Password) || c.check(creds[0].User, creds[0].Password+"x") {
			t.Fatalf("checker of %q disagrees with it (%v)", creds, err)
		}
	})
}

func TestReadCredentialsRefusesOpenFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "creds")
	for mode, ok := range map[os.FileMode]bool{0o600: true, 0o640: true, 0o644: false, 0o602: false} {
		if err := os.WriteFile(path, []byte("admin:secret\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		os.Chmod(path, mode)
		_, err := ReadCredentials(path)
		if (err == nil) != ok || (err != nil && !strings.Contains(err.Error(), "chmod 600")) {
			t.Errorf("mode %04o: %v", mode, err)
		}
	}
	if _, err := ReadCredentials(dir); err == nil {
		t.Error("read a directory")
	}
	if _, err := ReadCredentials(filepath.Join(dir, "missing")); err == nil {
		t.Error("read a missing file")
	}
}

// TestEnsureCredentials: a password is generated into a new 0600 file,
// kept across calls, and a symlink or an open file at the path is replaced,
// never followed or trusted.
func TestEnsureCredentials(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "run", "http-credentials")
	first, reused, err := EnsureCredentials(path)
	if err != nil || reused || len(first) != 1 || first[0].User != "vigil" || len(first[0].Password) < 20 {
		t.Fatalf("generated %v, reused %v: %v", first, reused, err)
	}
	if fi, err := os.Lstat(path); err != nil || fi.Mode() != 0o600 {
		t.Fatalf("file %v: %v", fi.Mode(), err)
	}
	again, reused, err := EnsureCredentials(path)
	if err != nil || !reused || !reflect.DeepEqual(again, first) {
		t.Fatalf("second call: %v %v %v", again, reused, err)
	}

	target := filepath.Join(dir, "target")
	os.WriteFile(target, []byte("elsewhere:x\n"), 0o600)
	os.Remove(path)
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	creds, reused, err := EnsureCredentials(path)
	if err != nil || reused || creds[0].Password == first[0].Password {
		t.Fatalf("through a symlink: %v %v %v", creds, reused, err)
	}
	if b, _ := os.ReadFile(target); string(b) != "elsewhere:x\n" {
		t.Fatalf("the symlink's target was written: %q", b)
	}
	if fi, _ := os.Lstat(path); !fi.Mode().IsRegular() {
		t.Fatalf("path is %v", fi.Mode())
	}

	os.Chmod(path, 0o644)
	if _, reused, err := EnsureCredentials(path); err != nil || reused {
		t.Fatalf("a world-readable file was trusted: %v %v", reused, err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "run", ".*")); len(left) > 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}
