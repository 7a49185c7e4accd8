package daemon

import (
	"log/slog"

	"github.com/vigil-bosh/vigil/control"
)

// keepEmptied keeps the previous configuration of every job whose bpm.yml
// now lists no processes although it listed some, and reports it as an
// error. An empty file is what a reader sees while bpm.yml is rewritten in
// place (truncated, then written): taking the job's processes down on it
// would stop them for a moment's partial write. A job is removed by
// removing its bpm.yml (or its directory), which stops its processes.
func keepEmptied(old, next *loaded, log *slog.Logger) {
	for name, j := range next.jobs {
		prev := old.jobs[name]
		if len(j.Processes) > 0 || prev == nil || len(prev.Processes) == 0 {
			continue
		}
		next.jobs[name] = prev
		msg := "bpm.yml lists no processes (is it being written?): the job keeps running with its previous configuration"
		next.problems = append(next.problems, control.Problem{Severity: "error", Job: name, File: j.ConfigPath, Message: msg})
		log.Error("configuration", "job", name, "error", msg)
	}
}
