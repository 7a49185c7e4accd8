package systemd

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestRelayLogs: lines appended to a process's log after its start reach
// the unit's stdout (the journal); those from before do not.
func TestRelayLogs(t *testing.T) {
	dir := t.TempDir()
	out, errLog := filepath.Join(dir, "p.stdout.log"), filepath.Join(dir, "p.stderr.log")
	if err := os.WriteFile(out, []byte("from an earlier start\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	from := logEnds(out, errLog)
	r, w := io.Pipe()
	stop := relayLogs(out, errLog, from, w, nil)
	defer r.Close()
	f, err := os.OpenFile(out, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("hello journal\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(r)
	line, err := br.ReadString('\n')
	if err != nil || line != "hello journal\n" {
		t.Fatalf("relayed %q (%v), want the new line only", line, err)
	}
	// The last line, written just before the stop, is copied too.
	if _, err := f.WriteString("last words\n"); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	go func() { l, _ := br.ReadString('\n'); got <- l; io.Copy(io.Discard, r) }()
	stop()
	if l := <-got; l != "last words\n" {
		t.Fatalf("at the stop, relayed %q, want the last line", l)
	}
}
