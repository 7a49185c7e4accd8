package logtail

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func writeFile(t testing.TB, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "x.log")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLast(t *testing.T) {
	for _, tc := range []struct {
		name, content string
		n             int
		max           int64
		want          []string
	}{
		{"empty", "", 5, 100, nil},
		{"one line", "a\n", 5, 100, []string{"a"}},
		{"final line without newline", "a\nb", 5, 100, []string{"a", "b"}},
		{"last n", "a\nb\nc\nd\n", 2, 100, []string{"c", "d"}},
		{"empty lines kept", "a\n\n\nb\n", 5, 100, []string{"a", "", "", "b"}},
		{"single empty line", "\n", 5, 100, []string{""}},
		{"window drops cut line", "aaaa\nbb\ncc\n", 5, 5, []string{"cc"}},
		{"window on a line start", "aaaa\nbb\ncc\n", 5, 6, []string{"bb", "cc"}},
		{"window on a newline", "aaaa\nbb\ncc\n", 5, 7, []string{"bb", "cc"}},
		{"long line tail", strings.Repeat("x", 50) + "\n", 5, 10, []string{"xxxxxxxxx"}},
		{"long final line tail", "a\n" + strings.Repeat("x", 50), 5, 10, []string{"xxxxxxxxxx"}},
		{"window only a newline", "abc\n", 5, 1, nil},
		{"n zero", "a\n", 0, 100, nil},
		{"max zero", "a\n", 3, 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Last(writeFile(t, tc.content), tc.n, tc.max)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Last(%q, %d, %d) = %q, want %q", tc.content, tc.n, tc.max, got, tc.want)
			}
		})
	}
}

func TestLastMissingFile(t *testing.T) {
	got, err := Last(filepath.Join(t.TempDir(), "none.log"), 5, 100)
	if got != nil || err != nil {
		t.Fatalf("missing file: %q, %v; want nil, nil", got, err)
	}
}

func TestLastRefusesSymlinkAndNonRegular(t *testing.T) {
	dir := t.TempDir()
	secret := writeFile(t, "secret\n")
	link := filepath.Join(dir, "link.log")
	if err := os.Symlink(secret, link); err != nil {
		t.Fatal(err)
	}
	if got, err := Last(link, 5, 100); err == nil {
		t.Fatalf("symlink read: %q", got)
	}
	if got, err := Last(dir, 5, 100); err == nil {
		t.Fatalf("directory read: %q", got)
	}
}

// FuzzLast checks Last against a plain reading of the whole file: the lines
// it returns are the last lines of the file, in order, each complete unless
// it is the only one and the window held no newline.
func FuzzLast(f *testing.F) {
	f.Add("a\nb\nc\n", 2, int64(4))
	f.Add("a\nb", 5, int64(100))
	f.Add("\n\n\n", 2, int64(2))
	f.Add("long line without end", 1, int64(3))
	f.Fuzz(func(t *testing.T, content string, n int, maxBytes int64) {
		if n > 1000 || maxBytes > 1<<20 {
			return
		}
		got, err := Last(writeFile(t, content), n, maxBytes)
		if err != nil {
			t.Fatal(err)
		}
		if (n < 1 || maxBytes < 1) && got != nil {
			t.Fatalf("n=%d maxBytes=%d gave %q", n, maxBytes, got)
		}
		if len(got) == 0 {
			return
		}
		if len(got) > max(n, 0) {
			t.Fatalf("%d lines for n=%d", len(got), n)
		}
		var size int
		for _, l := range got {
			size += len(l) + 1
			if strings.Contains(l, "\n") {
				t.Fatalf("line %q holds a newline", l)
			}
		}
		if int64(size) > maxBytes+1 {
			t.Fatalf("%d bytes returned from a %d byte window", size, maxBytes)
		}
		if len(got) == 0 {
			return
		}
		joined := strings.Join(got, "\n")
		body := strings.TrimSuffix(content, "\n")
		if !strings.HasSuffix(body, joined) {
			t.Fatalf("%q is not the end of %q", joined, content)
		}
		if int64(len(content)) <= maxBytes && len(got) < n {
			if want := strings.Split(body, "\n"); !reflect.DeepEqual(got, want) && content != "" {
				t.Fatalf("whole file fits: got %q, want %q", got, want)
			}
		}
	})
}

func TestTailEnd(t *testing.T) {
	path := writeFile(t, "a\nb\nc\n")
	lines, end, err := Tail(path, 1, 100)
	if err != nil || !reflect.DeepEqual(lines, []string{"c"}) || end != 6 {
		t.Fatalf("Tail = %q, %d, %v", lines, end, err)
	}
	if lines, end, err := Tail(path, 0, 100); lines != nil || end != 6 || err != nil {
		t.Fatalf("Tail with n=0 = %q, %d, %v; want nil, 6, nil", lines, end, err)
	}
	if _, end, err := Tail(path+".none", 5, 100); end != 0 || err != nil {
		t.Fatalf("Tail of a missing file: %d, %v", end, err)
	}
}
