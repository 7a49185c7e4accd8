package job

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vigil-bosh/vigil/boshpath"
)

// at is an expected error or warning: line, field and message.
type at struct {
	line  int
	field string
	msg   string
}

func layout(t testing.TB, root string) boshpath.Layout {
	t.Helper()
	l, err := boshpath.New(root)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// vcap is the stemcell layout, where bpm's texts apply verbatim.
var vcap = func() boshpath.Layout {
	l, err := boshpath.New(boshpath.DefaultRoot)
	if err != nil {
		panic(err)
	}
	return l
}()

// errorsOf checks that err is an ErrorList whose entries all name file, and
// returns them as (line, field, msg).
func errorsOf(t *testing.T, err error, file string) []at {
	t.Helper()
	var list ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("error %v (%T) is not an ErrorList", err, err)
	}
	var got []at
	for _, e := range list {
		if e.File != file {
			t.Errorf("error %q names file %q, want %q", e, e.File, file)
		}
		got = append(got, at{e.Line, e.Field, e.Msg})
	}
	return got
}

func warningsOf(t *testing.T, warns []Warning, file string) []at {
	t.Helper()
	var got []at
	for _, w := range warns {
		if w.File != file {
			t.Errorf("warning %q names file %q, want %q", w, w.File, file)
		}
		got = append(got, at{w.Line, w.Field, w.Msg})
	}
	return got
}

func sameAts(t *testing.T, what string, got, want []at) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s:\ngot  %s\nwant %s", what, fmtAts(got), fmtAts(want))
	}
}

func fmtAts(as []at) string {
	var b strings.Builder
	for _, a := range as {
		b.WriteString("\n  ")
		b.WriteString(position("", a.line, a.field, a.msg))
	}
	return b.String()
}

// mustParse parses src for job "web" under /var/vcap and fails on any error.
func mustParse(t *testing.T, src string) *Job {
	t.Helper()
	j, _, err := Parse(vcap, "web", "bpm.yml", []byte(src))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return j
}

// writeFile creates path (and its directories) with mode perm.
func writeFile(t *testing.T, path, content string, perm os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, perm); err != nil { // umask-proof
		t.Fatal(err)
	}
}
