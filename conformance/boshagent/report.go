//go:build conformance

package boshagent

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Markdown is the run message by message, as COMPATIBILITY records it:
// when each was sent, how long its final answer took, and the answer;
// then the times a release author asks for.
func (r *Run) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "| # | message | sent at | answered after | answer |\n|---|---|---|---|---|\n")
	for i, s := range r.Steps {
		ans := s.Result
		if s.Err != "" {
			ans = "**error**: " + s.Err
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s |\n", i+1, s.Name, secs(s.At), secs(s.Took), strings.ReplaceAll(ans, "|", `\|`))
	}
	fmt.Fprintf(&b, "\napply to running %s (start to running %s); drain update to stopped %s; "+
		"second start to running %s; drain shutdown to stopped %s\n",
		secs(r.ApplyToRunning), secs(r.StartToRunning), secs(r.DrainToStopped), secs(r.RestartToRunning), secs(r.ShutdownToStopped))
	return b.String()
}

func secs(d time.Duration) string { return fmt.Sprintf("%.3f s", d.Seconds()) }

// Save writes the run into dir: run.md (the table), run.json (the steps,
// the times and every exchange on the wire).
func (r *Run) Save(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "run.md"), []byte(r.Markdown()), 0o644); err != nil {
		return err
	}
	b, err := json.MarshalIndent(r, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "run.json"), b, 0o644)
}
