package main

import (
	"math"
	"strings"
	"testing"
)

func TestQuantileAndMedian(t *testing.T) {
	xs := []float64{5, 1, 4, 2, 3}
	if got := median(xs); got != 3 {
		t.Errorf("median odd = %v, want 3", got)
	}
	if got := median([]float64{4, 1, 3, 2}); got != 2.5 {
		t.Errorf("median even = %v, want 2.5", got)
	}
	if xs[0] != 5 {
		t.Error("median sorted its input in place")
	}
	var twenty []float64
	for i := 1; i <= 20; i++ {
		twenty = append(twenty, float64(i))
	}
	for _, tc := range []struct{ q, want float64 }{{0.95, 19}, {0.5, 10}, {1, 20}, {0, 1}, {0.01, 1}} {
		if got := quantile(twenty, tc.q); got != tc.want {
			t.Errorf("quantile(1..20, %v) = %v, want %v", tc.q, got, tc.want)
		}
	}
	if !math.IsNaN(quantile(nil, 0.5)) || !math.IsNaN(median(nil)) || !math.IsNaN(mean(nil)) {
		t.Error("empty input should give NaN")
	}
	if got := mean([]float64{1, 2, 6}); got != 3 {
		t.Errorf("mean = %v, want 3", got)
	}
}

func TestFormatting(t *testing.T) {
	for _, tc := range []struct {
		got, want string
	}{
		{fmtSec(0.0000421), "42 µs"},
		{fmtSec(0.0123), "12.3 ms"},
		{fmtSec(2.5), "2.50 s"},
		{fmtSec(math.NaN()), "n/a"},
		{fmtKiB(900), "900 KiB"},
		{fmtKiB(20480), "20.0 MiB"},
		{fmtRatio(1, 4), "×0.25"},
		{fmtRatio(300, 2), "×150"},
		{fmtRatio(1, 0), "—"},
		{fmtRatio(math.NaN(), 1), "—"},
		{fmtIntervals([]float64{1, 2, 3}), "1.0, 2.0, 3.0 s"},
		{fmtIntervals([]float64{1, 1, 1, 1, 1, 1, 2, 3}), "1.0, 1.0, 1.0, …, 1.0, 2.0, 3.0 s"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

func TestParseStat(t *testing.T) {
	// The command name contains a space and a parenthesis on purpose.
	line := "4242 (we ird) x) S 17 4242 4242 0 -1 4194560 120 0 0 0 31 9 0 0 20 0 1 0 777 1234 56 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n"
	st, err := parseStat(line)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != 'S' || st.PPid != 17 || st.Ticks != 40 || st.ChildTicks != 0 {
		t.Errorf("parseStat = %+v, want state S, ppid 17, ticks 40, children's 0", st)
	}
	if st, _ := parseStat(strings.Replace(line, " 31 9 0 0 ", " 31 9 5 2 ", 1)); st.ChildTicks != 7 {
		t.Errorf("children's ticks %d, want 7", st.ChildTicks)
	}
	if v, err := parseSchedstat("12345678 999 17\n"); err != nil || v != 12345678 {
		t.Errorf("parseSchedstat = %d, %v", v, err)
	}
	for _, bad := range []string{"", "12 (x", "12 (x) S 1 2"} {
		if _, err := parseStat(bad); err == nil {
			t.Errorf("parseStat(%q) succeeded", bad)
		}
	}
}

func TestParseSmapsRollup(t *testing.T) {
	in := `55d0c0a00000-7ffd6b3f2000 ---p 00000000 00:00 0                          [rollup]
Rss:                4312 kB
Pss:                1280 kB
Pss_Dirty:           600 kB
Pss_Anon:            512 kB
Shared_Clean:       3000 kB
Private_Clean:        20 kB
Private_Dirty:       580 kB
`
	m, err := parseSmapsRollup(in)
	if err != nil {
		t.Fatal(err)
	}
	if m.RSS != 4312 || m.PSS != 1280 || m.Private != 600 {
		t.Errorf("parseSmapsRollup = %+v, want RSS 4312 PSS 1280 private 600", m)
	}
	if _, err := parseSmapsRollup("Rss: 12 kB\n"); err == nil {
		t.Error("missing Pss accepted")
	}
	if _, err := parseSmapsRollup("Rss: x kB\nPss: 1 kB\n"); err == nil {
		t.Error("bad number accepted")
	}
}

func TestDescendantsOf(t *testing.T) {
	parents := map[int]int{1: 0, 10: 1, 11: 10, 12: 10, 13: 12, 20: 1, 21: 20}
	got := descendantsOf(parents, 10)
	want := []int{10, 11, 12, 13}
	if len(got) != len(want) {
		t.Fatalf("descendantsOf = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("descendantsOf = %v, want %v", got, want)
		}
	}
}

func TestRenderTable(t *testing.T) {
	cells := map[string]map[string]cell{
		"t": {"vigil": {V: 1, Text: "1.00 s"}, "monit": {V: 4, Text: "4.00 s"}},
		"n": {"monit": {V: math.NaN(), Text: "a|b"}},
	}
	get := func(key, peer string) (cell, bool) { c, ok := cells[key][peer]; return c, ok }
	tb := table{Title: "T", Note: "note", Cols: []column{{"time", "t", true}, {"text", "n", false}}}
	got := renderTable(tb, []string{"vigil", "monit", "s6"}, get)
	want := "### T\n\nnote\n\n" +
		"| supervisor | time | vigil ÷ | text |\n|---|--:|--:|--:|\n" +
		"| vigil | 1.00 s | — | — |\n" +
		"| monit | 4.00 s | ×0.25 | a\\|b |\n" +
		"| s6 | — | — | — |\n\n"
	if got != want {
		t.Errorf("renderTable:\n%s\nwant:\n%s", got, want)
	}
	sum := renderSummary([]summaryRow{{"time", "t"}}, []string{"vigil", "monit"}, get)
	if !strings.Contains(sum, "| time | 1.00 s | 4.00 s |") {
		t.Errorf("renderSummary:\n%s", sum)
	}
}

func TestSpecAndConfigs(t *testing.T) {
	s := spec{Dir: "/d", N: 3, Child: "/bin/child", Report: "/d/r.sock", Variant: ignoreLast}
	if s.name(0) != "p0001" || s.name(2) != "p0003" {
		t.Errorf("names %s %s", s.name(0), s.name(2))
	}
	if e := s.env(2); len(e) != 2 || e[1] != "BENCH_IGNORE_TERM=1" {
		t.Errorf("env of the last child = %v", e)
	}
	if e := s.env(0); len(e) != 1 || e[0] != "BENCH_REPORT=/d/r.sock" {
		t.Errorf("env of the first child = %v", e)
	}
	if got, want := runScript(s, 0), "#!/bin/sh\nexec env -i 'BENCH_REPORT=/d/r.sock' '/bin/child'\n"; got != want {
		t.Errorf("runScript = %q, want %q", got, want)
	}
	y := bpmYAML(spec{N: 1, Child: "/bin/child", Report: "/d/r.sock", Variant: crashLoop}, "/bin/child", false, "")
	want := "processes:\n- name: p0001\n  executable: \"/bin/child\"\n  env:\n    BENCH_REPORT: \"/d/r.sock\"\n    BENCH_EXIT: \"1\"\n"
	if y != want {
		t.Errorf("bpmYAML = %q, want %q", y, want)
	}
	y = bpmYAML(spec{N: 1, Report: "/r/data/bench/r.sock"}, "/r/packages/bench/bin/child", true, "nobody")
	want = "processes:\n- name: p0001\n  executable: \"/r/packages/bench/bin/child\"\n  ephemeral_disk: true\n  user: nobody\n  env:\n    BENCH_REPORT: \"/r/data/bench/r.sock\"\n"
	if y != want {
		t.Errorf("isolated bpmYAML = %q, want %q", y, want)
	}
}

func TestSelectPeers(t *testing.T) {
	got, err := selectPeers("s6, supervisord,vigil")
	if err != nil || strings.Join(got, ",") != "vigil,supervisor,s6" {
		t.Errorf("selectPeers = %v, %v", got, err)
	}
	if _, err := selectPeers("systemd"); err == nil {
		t.Error("unknown supervisor accepted")
	}
}

func TestStatusRows(t *testing.T) {
	table := "JOB    PROCESS  STATE    HEALTH  PID\n" +
		"bench  p001     running  ready   41\n" +
		"bench  p002     backoff  -       -\n" +
		"other  x        running  ready   7\n" +
		"warning: all 2 processes: isolation is switched off\n"
	if n := statusRows(table, "bench"); n != 2 {
		t.Fatalf("statusRows = %d, want 2", n)
	}
}
