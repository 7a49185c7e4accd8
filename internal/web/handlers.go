package web

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/control"
)

// statusTimeout bounds a status read (the daemon answers from snapshots).
const statusTimeout = 5 * time.Second

// pageView is the whole page: the status and the outcome of an action
// posted without JavaScript.
type pageView struct {
	Status  statusView
	Kinds   []string // the event kinds the timeline's filter offers
	Message string
	Failed  bool
}

// status reads the backend's status and builds its view; a failure shows
// on the page rather than failing the request.
func (s *Server) status(ctx context.Context, prev map[string]cpuSample) (statusView, map[string]cpuSample) {
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	st, err := s.cfg.Backend.Status(ctx)
	v, samples := buildView(st, s.token, time.Now(), prev)
	if err != nil {
		v.Error = "status unavailable: " + err.Error()
	}
	v.Instance, _ = s.spec.get() // none off a BOSH VM: the host names it
	v.Graphs = s.cfg.History != nil
	return v, samples
}

func (s *Server) page(w http.ResponseWriter, r *http.Request) {
	v, _ := s.status(r.Context(), nil)
	s.render(w, http.StatusOK, "page", pageView{Status: v, Kinds: eventKinds})
}

// render executes a template into a buffer first, so that a template
// error is a 500 and never half a page.
func (s *Server) render(w http.ResponseWriter, code int, name string, data any) {
	var b bytes.Buffer
	if err := s.tmpl.ExecuteTemplate(&b, name, data); err != nil {
		s.log.Error("web: render", "template", name, "error", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write(b.Bytes())
}

// actionReply is an action's outcome as the page's script reads it.
type actionReply struct {
	OK      bool   `json:"ok"`
	Message string `json:"message"`
}

// action runs a start, stop or restart posted from the page. Only POST
// reaches it (and only same-origin, through the cross-origin check); the
// form must carry this server's token. The request waits for the
// processes to settle for at most ActionTimeout.
func (s *Server) action(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		s.actionDone(w, r, http.StatusBadRequest, "bad form: "+err.Error())
		return
	}
	f := r.PostForm
	if subtle.ConstantTimeCompare([]byte(f.Get("csrf")), []byte(s.token)) != 1 {
		s.log.Warn("web: action without this server's token refused", "remote", r.RemoteAddr)
		s.actionDone(w, r, http.StatusForbidden, "the page is out of date (or the request did not come from it): reload it")
		return
	}
	req := control.ActionRequest{Action: f.Get("action"), Job: f.Get("job"), Process: f.Get("process")}
	if msg := checkAction(req); msg != "" {
		s.actionDone(w, r, http.StatusBadRequest, msg)
		return
	}
	target := req.Job
	if req.Process != "" {
		target += "/" + req.Process
	}
	user, _, _ := r.BasicAuth()
	host, _, _ := net.SplitHostPort(r.RemoteAddr)
	ctx, cancel := context.WithTimeout(control.WithRequester(r.Context(), "page user "+user+" from "+host), s.cfg.ActionTimeout)
	defer cancel()
	_, err := s.cfg.Backend.Act(ctx, req)
	attrs := []any{"user", user, "action", req.Action, "target", target}
	if err != nil {
		attrs = append(attrs, "error", err)
	}
	s.log.Info("web: action", attrs...)
	code, msg := http.StatusOK, fmt.Sprintf("%s %s: done", req.Action, target)
	switch {
	case err == nil:
	case errors.Is(err, context.DeadlineExceeded):
		code, msg = http.StatusGatewayTimeout, fmt.Sprintf("%s %s: not settled after %s; it goes on, and the page shows when it does", req.Action, target, s.cfg.ActionTimeout)
	case errors.Is(err, control.ErrNotFound):
		code, msg = http.StatusNotFound, err.Error()
	case errors.Is(err, control.ErrBadRequest):
		code, msg = http.StatusBadRequest, err.Error()
	default:
		code, msg = http.StatusConflict, fmt.Sprintf("%s %s: %v", req.Action, target, err)
	}
	s.actionDone(w, r, code, msg)
}

// checkAction says what is wrong with req, or "" when nothing is.
func checkAction(req control.ActionRequest) string {
	switch req.Action {
	case control.ActionStart, control.ActionStop, control.ActionRestart:
	default:
		return fmt.Sprintf("unknown action %q", req.Action)
	}
	if err := boshpath.CheckName(req.Job); err != nil {
		return "job: " + err.Error()
	}
	if req.Process != "" {
		if err := boshpath.CheckName(req.Process); err != nil {
			return "process: " + err.Error()
		}
	}
	return ""
}

// actionDone answers the page's script with JSON, and a form posted
// without it with the page and the message.
func (s *Server) actionDone(w http.ResponseWriter, r *http.Request, code int, msg string) {
	if strings.Contains(r.Header.Get("Accept"), "application/json") {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(actionReply{OK: code == http.StatusOK, Message: msg})
		return
	}
	v, _ := s.status(r.Context(), nil)
	s.render(w, code, "page", pageView{Status: v, Kinds: eventKinds, Message: msg, Failed: code != http.StatusOK})
}
