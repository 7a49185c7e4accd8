package systemd

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/vigil-bosh/vigil/internal/logtail"
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
// exist (the start made it). The returned function copies what is left up
// to the files' ends (a second at most: a line cut short stays in the
// file), then stops the copies and waits for them. A nil writer copies
// nothing for that stream.
func relayLogs(stdoutLog, stderrLog string, from []int64, stdout, stderr io.Writer) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var relays []*relay
	for i, r := range []struct {
		path string
		w    io.Writer
	}{{stdoutLog, stdout}, {stderrLog, stderr}} {
		if r.w == nil {
			continue
		}
		rl := &relay{path: r.path, at: from[i], progress: make(chan struct{}, 1)}
		relays = append(relays, rl)
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = logtail.Follow(ctx, r.path, from[i], func(line string) error {
				_, err := fmt.Fprintln(r.w, line)
				rl.mu.Lock()
				rl.at += int64(len(line)) + 1
				rl.mu.Unlock()
				select {
				case rl.progress <- struct{}{}:
				default:
				}
				return err
			})
		}()
	}
	return func() {
		deadline := time.After(time.Second)
		for _, rl := range relays {
			rl.drain(deadline)
		}
		cancel()
		wg.Wait()
	}
}

// relay is one log's copy: how far into the file it has copied.
type relay struct {
	path     string
	mu       sync.Mutex
	at       int64
	progress chan struct{} // a line was copied
}

// drain waits until the copy has reached the file's present end, or the
// deadline.
func (r *relay) drain(deadline <-chan time.Time) {
	fi, err := os.Stat(r.path)
	if err != nil {
		return
	}
	for {
		r.mu.Lock()
		done := r.at >= fi.Size()
		r.mu.Unlock()
		if done {
			return
		}
		select {
		case <-r.progress:
		case <-deadline:
			return
		}
	}
}
