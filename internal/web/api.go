package web

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/vigil-bosh/vigil/internal/history"
)

// historyReply is the answer of GET /v1/history and the data of a
// "samples" event.
type historyReply struct {
	Step   float64          `json:"step_seconds"` // of the store's fine points
	Series []history.Series `json:"series"`
}

// Bounds of a history query's span.
const (
	defaultSpan = time.Hour
	maxSpan     = 7 * 24 * time.Hour
)

// apiStatus answers GET /v1/status: the status as the control API gives
// it (the JSON of vigil status --json), behind the page's credentials.
func (s *Server) apiStatus(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), statusTimeout)
	defer cancel()
	st, err := s.cfg.Backend.Status(ctx)
	if err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "status unavailable: " + err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, st)
}

// apiHistory answers GET /v1/history?span=1h[&job=J[&process=P]]: the
// series of every process (or of those named) over the span, from the
// fine points when they cover it, else the coarse ones.
func (s *Server) apiHistory(w http.ResponseWriter, r *http.Request) {
	if s.cfg.History == nil {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "this daemon keeps no history"})
		return
	}
	q := r.URL.Query()
	span := defaultSpan
	if v := q.Get("span"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 || d > maxSpan {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "span: want a duration up to 168h, e.g. 15m, 1h, 6h"})
			return
		}
		span = d
	}
	writeJSON(w, http.StatusOK, historyReply{Step: s.cfg.History.Step().Seconds(),
		Series: s.cfg.History.Query(span, q.Get("job"), q.Get("process"))})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write(append(b, '\n'))
}
