package systemd

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/vigil-bosh/vigil/logtail"
)

// logEnds are the sizes of the process's log files before its start (0
// for a missing file): the relay starts there.
func logEnds(paths ...string) []int64 {
	out := make([]int64, len(paths))
	for i, p := range paths {
		if fi, err := os.Stat(p); err == nil {
			out[i] = fi.Size()
		}
	}
	return out
}

// relayLogs copies each line appended to the process's log files past
// from (logEnds, taken before the start) to stdout and stderr (a unit's
// journal), while bpm's files keep every line too. The log directory must
// exist (the start made it). The returned function stops the copies and
// waits for them. A nil writer copies nothing for that stream.
func relayLogs(stdoutLog, stderrLog string, from []int64, stdout, stderr io.Writer) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i, r := range []struct {
		path string
		w    io.Writer
	}{{stdoutLog, stdout}, {stderrLog, stderr}} {
		if r.w == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = logtail.Follow(ctx, r.path, from[i], func(line string) error {
				_, err := fmt.Fprintln(r.w, line)
				return err
			})
		}()
	}
	return func() { cancel(); wg.Wait() }
}
