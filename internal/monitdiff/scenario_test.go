package monitdiff

import (
	"strings"
	"testing"
)

// TestParseAndDiffers: a scenario's files, steps and deliberate
// differences; the differences rewrite only the sections they name, and
// each needs its reason.
func TestParseAndDiffers(t *testing.T) {
	sc, err := Parse("x", []byte(`# about
== file bosh/etc/monitrc 0700
{{preamble}}
== steps
ticks 2
snapshot boot
monit stop a
== differs
# vigil says running
boot :: s|Timeout|running|
boot :: d|^drop me$|
# in any order per service
boot :: by service
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(sc.Files) != 1 || sc.Files[0].Mode != 0o700 || len(sc.Steps) != 3 || sc.Steps[2].Verb != "monit" ||
		strings.Join(sc.Steps[2].Args, " ") != "stop a" || len(sc.Differs) != 3 || sc.Differs[1].Reason != "vigil says running" {
		t.Fatalf("parsed %+v", sc)
	}
	rec := "## snapshot boot\nprograms:\n  b start\n  a start\n  a stop\nstatus Timeout\ndrop me\n## monit stop a\nstatus Timeout\n"
	got := sc.Grouped(sc.Apply(rec))
	want := "## snapshot boot\nprograms:\n  a start\n  a stop\n  b start\nstatus running\n## monit stop a\nstatus Timeout\n"
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	for _, bad := range []string{
		"== steps\nticks 1\n== differs\nboot :: s|a|b|\n", // no reason
		"== steps\nbogus\n",                               // unknown step
		"== steps\nticks 0\n",                             // no ticks
		"== steps\nticks 1\n== differs\n# r\nboot :: x\n", // unknown rule
	} {
		if _, err := Parse("x", []byte(bad)); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

// TestNormalize: what varies is replaced, the rest stays.
func TestNormalize(t *testing.T) {
	in := "    pid                               4242\n    children                          0\n" +
		"    data collected                    Tue Dec  1 21:54:07 2026\n" +
		"        <collected_sec>1796162235</collected_sec>\n        <responsetime>-1.000</responsetime>\n" +
		"        <responsetime>0.004</responsetime>\n" +
		"        <status_message>total mem amount of 1436kB matches resource limit [total mem amount>1kB]</status_message>\n"
	want := "    pid                               -\n    children                          0\n" +
		"    data collected                    DATE\n" +
		"        <collected_sec>-</collected_sec>\n        <responsetime>-1.000</responsetime>\n" +
		"        <responsetime>-</responsetime>\n" +
		"        <status_message>total mem amount of -kB matches resource limit [total mem amount>1kB]</status_message>\n"
	if got := normalizeLines(in); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}
