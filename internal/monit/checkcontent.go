package monit

import (
	"bufio"
	"crypto/md5"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/vigil-bosh/vigil/internal/monit/monitrc"
)

// A file's content tests: checksums and line matches.

// checksum runs a checksum test: against the expected sum (or the one
// seen first), or, for a change test, against the cycle before.
func (e *Engine) checksum(i int, t monitrc.Test, svc *monitrc.Service, st *svcState, info *FileInfo) posted {
	kind := t.Hash
	if kind == "" {
		kind = "md5"
	}
	sum, err := fileSum(svc.Path, kind)
	alert := monitrc.Action{Kind: monitrc.ActAlert}
	if err != nil {
		return posted{key: "data", bit: EventData, failed: true, message: "cannot compute checksum for " + svc.Path,
			action: alert, recover: alert}
	}
	info.Checksum, info.Hash = sum, strings.ToUpper(kind)
	want := t.Sum
	if want == "" {
		if st.memo.sum == "" {
			st.memo.sum = sum
		}
		want = st.memo.sum
	}
	differs := sum != want
	if t.Changed {
		st.memo.sum = sum
		return testResult(i, t, checked{EventChecksum, differs,
			pick(differs, "checksum was changed for "+svc.Path, "checksum has not changed")})
	}
	return testResult(i, t, checked{EventChecksum, differs, pick(differs, "checksum test failed for "+svc.Path, "checksum succeeded")})
}

func fileSum(path, kind string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("checksum: %w", err)
	}
	defer f.Close()
	var h hash.Hash = md5.New()
	if kind == "sha1" {
		h = sha1.New()
	}
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("checksum: %w", err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// content reads the lines written since the last cycle (from the start
// when the file was replaced or shrank) and runs the match tests on each
// complete line, as monit's check_match: for each test in order, a line
// that matches (or, for "not match", does not) is a change (content
// match) unless an ignore test matches it too, which ends that line's
// tests; one that does not is "content doesn't match".
func (e *Engine) content(svc *monitrc.Service, st *svcState, info *FileInfo, inode uint64) []posted {
	var ifs, ignores []int
	for i, t := range svc.Tests {
		if t.Kind == monitrc.TestMatch && t.Ignore {
			ignores = append(ignores, i)
		} else if t.Kind == monitrc.TestMatch {
			ifs = append(ifs, i)
		}
	}
	if len(ifs) == 0 {
		return nil
	}
	if !st.memo.seen {
		st.memo.readPos = info.Size // monit starts at the end of the file
		return nil
	}
	if inode != st.memo.inode || st.memo.readPos > info.Size {
		st.memo.readPos = 0
	}
	f, err := os.Open(svc.Path)
	if err != nil {
		return nil
	}
	defer f.Close()
	if _, err := f.Seek(st.memo.readPos, io.SeekStart); err != nil {
		return nil
	}
	var out []posted
	r := bufio.NewReader(f)
	for {
		line, err := r.ReadString('\n')
		if err != nil { // an incomplete line waits for the next cycle
			return out
		}
		st.memo.readPos += int64(len(line))
		line = strings.TrimSuffix(line, "\n")
	tests:
		for _, i := range ifs {
			t := svc.Tests[i]
			switch {
			case matches(svc, t, line) == t.Not:
				out = append(out, changeResult(i, t, checked{EventContent, false, "content doesn't match [" + line + "]"}))
			case ignored(svc, ignores, line):
				break tests
			default:
				out = append(out, changeResult(i, t, checked{EventContent, true, "content match [" + line + "]"}))
			}
		}
	}
}

// changeResult is testResult for a test that reports changes (a match).
func changeResult(i int, t monitrc.Test, c checked) posted {
	p := testResult(i, t, c)
	p.change, p.recover = true, monitrc.Action{}
	return p
}

func ignored(svc *monitrc.Service, ignores []int, line string) bool {
	for _, i := range ignores {
		if t := svc.Tests[i]; matches(svc, t, line) != t.Not {
			return true
		}
	}
	return false
}

// matches reports whether line matches the test's expression (each line
// of the file of expressions for a PATH pattern).
func matches(svc *monitrc.Service, t monitrc.Test, line string) bool {
	pats := []string{t.Pattern}
	if t.PatternFile {
		b, err := os.ReadFile(filepath.Clean(t.Pattern))
		if err != nil {
			return false
		}
		pats = strings.Split(strings.TrimSpace(string(b)), "\n")
	}
	for _, p := range pats {
		if re, err := regexp.Compile(p); err == nil && re.MatchString(line) {
			return true
		}
	}
	return false
}
