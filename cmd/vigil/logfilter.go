package main

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/vigil-bosh/vigil/internal/logtail"
)

// filterLines bounds how many of a file's last lines --since and --grep
// look through (and how many --since shows without -n).
const filterLines = 10000

// lineFilter is logs' --since and --grep; its zero value lets every line
// through.
type lineFilter struct {
	since time.Time      // zero: no bound
	re    *regexp.Regexp // nil: every line
}

func (f lineFilter) active() bool { return !f.since.IsZero() || f.re != nil }

// tail is logtail.Tail of path, filtered: the last n lines that were
// written since f.since and match f.re, among the file's last
// filterLines. A line is judged by its time stamp (logs.timestamps
// writes one first on each line); a line without one by the file's
// modification time, the time of its newest line.
func (f lineFilter) tail(path string, n int) ([]string, int64, error) {
	if !f.active() {
		return logtail.Tail(path, n, int64(n)*logsBytesPerLine)
	}
	lines, end, err := logtail.Tail(path, filterLines, filterLines*logsBytesPerLine)
	if err != nil || len(lines) == 0 {
		return nil, end, err
	}
	recent := true
	if !f.since.IsZero() {
		fi, err := os.Stat(path)
		recent = err == nil && !fi.ModTime().Before(f.since)
	}
	kept := lines[:0]
	for _, l := range lines {
		if at, ok := lineTime(l); ok && !f.since.IsZero() && at.Before(f.since) || !ok && !recent {
			continue
		}
		if f.re == nil || f.re.MatchString(l) {
			kept = append(kept, l)
		}
	}
	return kept[max(0, len(kept)-n):], end, nil
}

// lineTime reads the time stamp logs.timestamps begins a line with
// (RFC 3339 in UTC with milliseconds, then a space).
func lineTime(line string) (time.Time, bool) {
	stamp, _, ok := strings.Cut(line, " ")
	if !ok || len(stamp) < len("2006-01-02T15:04:05Z") || stamp[4] != '-' {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, stamp)
	return t, err == nil
}

// parseSince reads --since: a duration before now ("10m", "1h30m"), a
// time of today ("15:04", "15:04:05"), a date and time ("2006-01-02
// 15:04[:05]", local time) or RFC 3339.
func parseSince(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, errors.New("want a duration ago, not ahead")
		}
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	for _, layout := range []string{"2006-01-02 15:04:05", "2006-01-02 15:04", "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, now.Location()); err == nil {
			return t, nil
		}
	}
	for _, layout := range []string{"15:04:05", "15:04"} {
		if t, err := time.ParseInLocation(layout, s, now.Location()); err == nil {
			y, m, d := now.Date()
			return time.Date(y, m, d, t.Hour(), t.Minute(), t.Second(), 0, now.Location()), nil
		}
	}
	return time.Time{}, fmt.Errorf("want a duration ago such as 10m or 2h, or a time such as 15:04, 2006-01-02 15:04 or %s", time.RFC3339)
}
