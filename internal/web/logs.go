package web

import (
	"context"
	"net/http"
	"slices"
	"strconv"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/logtail"
)

// Log tail bounds: lines shown by default and at most, and bytes read from
// the end of each file.
const (
	defaultLogLines = 100
	maxLogLines     = 1000
	maxLogBytes     = 1 << 20
)

// logsView is the "logs" template's data.
type logsView struct {
	Job, Process string
	Lines        int
	Streams      []logStream
}

// logStream is the tail of one log file.
type logStream struct {
	Name  string   `json:"name"` // stdout or stderr
	Path  string   `json:"path"`
	Lines []string `json:"lines"`
	Error string   `json:"error,omitempty"`
}

// logs shows the last lines of a process's stdout and stderr logs, the
// newest in view; the page's script then follows them (see follow).
func (s *Server) logs(w http.ResponseWriter, r *http.Request) {
	job, proc, n, ok := s.logTarget(w, r)
	if !ok {
		return
	}
	v := logsView{Job: job, Process: proc, Lines: n}
	for _, f := range s.streamsOf(job, proc) {
		ls := logStream{Name: f.name, Path: f.path}
		var err error
		if ls.Lines, err = logtail.Last(f.path, n, maxLogBytes); err != nil {
			ls.Error = err.Error()
		}
		v.Streams = append(v.Streams, ls)
	}
	s.render(w, http.StatusOK, "logs", v)
}

// logFile is one of a process's log files.
type logFile struct{ name, path string }

func (s *Server) streamsOf(job, proc string) []logFile {
	l := s.cfg.Layout
	return []logFile{{"stdout", l.StdoutLog(job, proc)}, {"stderr", l.StderrLog(job, proc)}}
}

// logTarget reads a log request's process and line count, answering the
// request itself when they are wrong: both names must be single path
// elements, and only a process the backend supervises has its logs shown.
func (s *Server) logTarget(w http.ResponseWriter, r *http.Request) (job, proc string, n int, ok bool) {
	job, proc = r.PathValue("job"), r.PathValue("process")
	for _, name := range []string{job, proc} {
		if err := boshpath.CheckName(name); err != nil {
			http.Error(w, "bad name: "+err.Error(), http.StatusBadRequest)
			return "", "", 0, false
		}
	}
	n = defaultLogLines
	if q := r.URL.Query().Get("n"); q != "" {
		v, err := strconv.Atoi(q)
		if err != nil || v < 1 {
			http.Error(w, "n: want a positive number of lines", http.StatusBadRequest)
			return "", "", 0, false
		}
		n = min(v, maxLogLines)
	}
	ctx, cancel := context.WithTimeout(r.Context(), statusTimeout)
	defer cancel()
	st, err := s.cfg.Backend.Status(ctx)
	if err != nil {
		http.Error(w, "status unavailable: "+err.Error(), http.StatusServiceUnavailable)
		return "", "", 0, false
	}
	if !slices.ContainsFunc(st.Processes, func(p control.ProcessStatus) bool { return p.Job == job && p.Process == proc }) {
		http.Error(w, "no process "+job+"/"+proc+" is supervised", http.StatusNotFound)
		return "", "", 0, false
	}
	return job, proc, n, true
}
