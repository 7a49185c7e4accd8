package systemd

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// lockedBuffer is a bytes.Buffer safe for the relay's goroutine.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// TestRelayLogs: what a process appends to its log after its start reaches
// the unit's stdout (the journal), all of it, even what it wrote just
// before the stop; what was there before the start does not.
func TestRelayLogs(t *testing.T) {
	dir := t.TempDir()
	out, errLog := filepath.Join(dir, "p.stdout.log"), filepath.Join(dir, "p.stderr.log")
	if err := os.WriteFile(out, []byte("from an earlier start\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	from := logEnds(out, errLog)
	var got lockedBuffer
	stop := relayLogs(out, errLog, from, &got, nil)
	f, err := os.OpenFile(out, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var want strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&want, "line %d\n", i)
	}
	if _, err := f.WriteString(want.String()); err != nil {
		t.Fatal(err)
	}
	stop() // the last lines are still being copied: the stop waits for them
	got.mu.Lock()
	defer got.mu.Unlock()
	if g := got.b.String(); g != want.String() {
		t.Fatalf("relayed %d bytes (%d lines), want %d bytes: every line written after the start, nothing before",
			len(g), strings.Count(g, "\n"), want.Len())
	}
}
