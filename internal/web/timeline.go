package web

import (
	"fmt"
	"time"

	"github.com/vigil-bosh/vigil/control"
)

// eventView is one timeline entry, as the "event" template renders it.
type eventView struct {
	Seq      uint64
	Time     string // RFC 3339, for <time datetime>
	Clock    string // hh:mm:ss UTC
	AgeMS    int64  // its age at render, for the page's ticking "ago"
	Job      string
	Process  string
	Kind     string
	Class    string // problem, operator or info: how the entry is drawn and filtered
	Text     string // what happened, in words
	Restarts int
}

// eventKinds are the kinds the timeline's filter offers, in the order a
// process meets them.
var eventKinds = []string{control.EventAction, control.EventStarted, control.EventRestarted, control.EventExited,
	control.EventOOMKilled, control.EventBackoff, control.EventStopping, control.EventEscalated, control.EventStopped,
	control.EventGaveUp, control.EventProbeFailed, control.EventProbeRecovered, control.EventHealthy,
	control.EventUnhealthy, control.EventReady, control.EventNotReady, control.EventUnmonitored,
	control.EventMonitored, control.EventConfigError, control.EventDrained, control.EventDrainFailed, control.EventLost}

// eventClass groups the kinds: what went wrong ("problem"), what
// operators did and the stops they asked for ("operator"), and the rest
// ("").
func eventClass(kind string) string {
	switch kind {
	case control.EventExited, control.EventOOMKilled, control.EventGaveUp, control.EventProbeFailed,
		control.EventUnhealthy, control.EventNotReady, control.EventBackoff, control.EventConfigError,
		control.EventLost, control.EventEscalated, control.EventDrainFailed:
		return "problem"
	case control.EventAction, control.EventStopping, control.EventStopped, control.EventUnmonitored,
		control.EventMonitored:
		return "operator"
	}
	return ""
}

func eventViewOf(ev control.Event, now time.Time) eventView {
	v := eventView{Seq: ev.Seq, Time: ev.Time.UTC().Format(time.RFC3339Nano), Clock: ev.Time.UTC().Format("15:04:05"),
		AgeMS: now.Sub(ev.Time).Milliseconds(), Job: ev.Job, Process: ev.Process, Kind: ev.Kind,
		Class: eventClass(ev.Kind), Restarts: ev.Restarts, Text: eventText(ev)}
	if v.Class == "" {
		v.Class = "info"
	}
	return v
}

// eventText says what an event is about beyond its kind.
func eventText(ev control.Event) string {
	switch ev.Kind {
	case control.EventRestarted:
		return fmt.Sprintf("restart %d, pid %d, down %s", ev.Restarts, ev.PID, formatSeconds(ev.DownSeconds))
	case control.EventStarted:
		if ev.PID > 0 {
			return fmt.Sprintf("pid %d", ev.PID)
		}
	case control.EventExited, control.EventOOMKilled:
		if ev.Exit != nil {
			return ev.Exit.Description
		}
	}
	return ev.Message
}

// formatSeconds shows a short duration: 850 µs, 12.5 ms, 2.10 s, 1m 3s.
func formatSeconds(s float64) string {
	switch {
	case s < 0.001:
		return fmt.Sprintf("%.0f µs", s*1e6)
	case s < 1:
		return fmt.Sprintf("%.1f ms", s*1e3)
	case s < 60:
		return fmt.Sprintf("%.2f s", s)
	}
	return formatDuration(time.Duration(s * float64(time.Second)))
}
