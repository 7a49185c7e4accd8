package monit

import (
	"path/filepath"
	"strings"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/internal/monit/monitrc"
	"github.com/vigil-bosh/vigil/internal/supervise"
)

// BPMShim returns the job and process a start program names when it is
// the bpm shim (ROOT/jobs/bpm/bin/bpm start JOB [-p PROC]): such a check
// is a bpm process, which a back end runs natively.
func BPMShim(l boshpath.Layout, p *monitrc.Program) (supervise.ID, bool) {
	if p == nil || len(p.Argv) < 3 || p.Argv[1] != "start" {
		return supervise.ID{}, false
	}
	bin := filepath.Clean(p.Argv[0])
	if bin != "/var/vcap/jobs/bpm/bin/bpm" && bin != filepath.Join(l.JobDir("bpm"), "bin", "bpm") {
		return supervise.ID{}, false
	}
	id := supervise.ID{Job: p.Argv[2], Process: p.Argv[2]}
	rest := p.Argv[3:]
	switch {
	case len(rest) == 0:
	case len(rest) == 2 && (rest[0] == "-p" || rest[0] == "--process"):
		id.Process = rest[1]
	case len(rest) == 1 && strings.HasPrefix(rest[0], "--process="):
		id.Process = strings.TrimPrefix(rest[0], "--process=")
	default:
		return supervise.ID{}, false
	}
	if boshpath.CheckName(id.Job) != nil || boshpath.CheckName(id.Process) != nil {
		return supervise.ID{}, false
	}
	return id, true
}
