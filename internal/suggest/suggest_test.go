package suggest

import (
	"strconv"
	"testing"
)

func TestClosest(t *testing.T) {
	for _, c := range []struct {
		name       string
		candidates []string
		want       string
	}{
		{"stpo", []string{"start", "stop", "status"}, "stop"},  // a transposition is one edit
		{"stat", []string{"start", "stop", "status"}, "start"}, // the first of two as close
		{"jsn", []string{"json", "jobs"}, "json"},              // one edit in a short name
		{"xyz", []string{"json", "jobs"}, ""},                  // nothing close
		{"web", []string{"web", "db"}, ""},                     // itself is not a suggestion
		{"Web", []string{"web", "db"}, "web"},                  // case is a slip too
		{"progam", []string{"program", "process"}, "program"},  // two edits in a longer name
		{"a", []string{"b", "c"}, ""},                          // never the whole name
		{"proces", []string{"processes", "process"}, "process"},
		{"timout", []string{"timeout", "uptime"}, "timeout"},
	} {
		got, ok := Closest(c.name, c.candidates)
		if got != c.want || ok != (c.want != "") {
			t.Errorf("Closest(%q, %q) = %q, %v; want %q", c.name, c.candidates, got, ok, c.want)
		}
	}
}

func TestPhrase(t *testing.T) {
	if got := Phrase("stpo", []string{"start", "stop"}, "commands"); got != ` (did you mean "stop"?)` {
		t.Errorf("close: %q", got)
	}
	if got := Phrase("frobnicate", []string{"start", "stop"}, "commands"); got != " (known commands: start, stop)" {
		t.Errorf("far: %q", got)
	}
	if got := Phrase("x", nil, "jobs"); got != "" {
		t.Errorf("none: %q", got)
	}
	var many []string
	for i := range 18 {
		many = append(many, "j"+strconv.Itoa(i))
	}
	if got := Known(many, "jobs"); got != " (known jobs: j0, j1, j2, j3, j4, j5, j6, j7, j8, j9, j10, j11, j12, j13, j14, j15 and 2 more)" {
		t.Errorf("many: %q", got)
	}
}

func TestDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"", "ab", 2}, {"kitten", "sitting", 3}, {"ab", "ba", 1}, {"stop", "stpo", 1}, {"ca", "abc", 3}} {
		if got := Distance(c.a, c.b); got != c.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}
