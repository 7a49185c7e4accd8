package launch

import (
	"os"
	"strconv"
	"testing"

	"github.com/vigil-bosh/vigil/job"
)

// TestSandboxLogRotationInJobOwnedDirectory has a process confined as the
// job's user (whose log directory it owns, mode 0750) write 16 MiB into a
// log rotated at 1 MiB keeping 2 files: the init renames in a directory it
// can only write with CAP_DAC_OVERRIDE, which it holds only as permitted
// once the executable runs. No file grows past the size, and none beyond
// the kept ones is left.
func TestSandboxLogRotationInJobOwnedDirectory(t *testing.T) {
	s := newSandboxed(t)
	s.init = embeddedInit(t) // the release's init, built without cgo: its capabilities are lowered
	const maxSize, keep, total = 1 << 20, 2, 16 << 20
	p := s.process("writer", "write", "TESTPROC_BYTES="+strconv.Itoa(total))
	p.Logs = job.LogRotation{MaxSize: maxSize, Keep: keep}
	r, pr := s.start(p)
	s.rep.Expect(t, "wrote")
	if e := s.exitOf(pr); e.Code != 0 || e.Signal != 0 {
		t.Fatalf("writer ended with %+v", e)
	}
	path := s.layout.StdoutLog("job", "writer")
	var kept int64
	for _, n := range []string{"", ".1", ".2"} {
		st, err := os.Stat(path + n)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d bytes", path+n, st.Size())
		if st.Size() > maxSize {
			t.Errorf("%s holds %d bytes, past max_size %d", path+n, st.Size(), maxSize)
		}
		kept += st.Size()
	}
	if _, err := os.Stat(path + ".3"); err == nil {
		t.Errorf("%s.3 kept with keep: %d", path, keep)
	}
	if out, errs := r.Dropped(); out != 0 || errs != 0 {
		t.Errorf("dropped %d, %d bytes", out, errs)
	}
	t.Logf("after %d bytes with max_size %d: %d bytes kept in %d files", total, maxSize, kept, keep+1)
}
