// Package suggest finds, for a name that matches nothing, the known names
// a user may have meant: "did you mean" for commands, flags, jobs,
// processes, signals and configuration keys. It is pure.
package suggest

import (
	"slices"
	"strconv"
	"strings"
)

// listed is how many candidates Known lists.
const listed = 16

// Closest returns the candidate closest to name by edit distance (case
// ignored), when it is close enough to be a slip: within one edit for a
// name of up to three letters, two for a longer one, and never a change of
// the whole name. A candidate equal to name is not a suggestion. Of two as
// close, the first in candidates wins.
func Closest(name string, candidates []string) (string, bool) {
	limit := 2
	if len(name) <= 3 {
		limit = 1
	}
	low := strings.ToLower(name)
	best, bestDist := "", limit+1
	for _, c := range candidates {
		lc := strings.ToLower(c)
		if c == name || abs(len(lc)-len(low)) >= bestDist {
			continue
		}
		if d := Distance(low, lc); d < bestDist && d < len(low) && d < len(lc) {
			best, bestDist = c, d
		}
	}
	return best, best != ""
}

// Phrase is what an error about name adds: ` (did you mean "x"?)` for the
// closest candidate, else the candidates themselves (see Known), else ""
// when there are none. what names the candidates in that list ("jobs",
// "commands").
func Phrase(name string, candidates []string, what string) string {
	if c, ok := Closest(name, candidates); ok {
		return ` (did you mean "` + c + `"?)`
	}
	return Known(candidates, what)
}

// Known lists candidates for an error: " (known jobs: a, b, c)", the
// first 16 with a count of the rest, or "" when there are none.
func Known(candidates []string, what string) string {
	if len(candidates) == 0 {
		return ""
	}
	shown := slices.Clone(candidates)
	more := ""
	if len(shown) > listed {
		more = " and " + strconv.Itoa(len(shown)-listed) + " more"
		shown = shown[:listed]
	}
	return " (known " + what + ": " + strings.Join(shown, ", ") + more + ")"
}

// Distance is the edit distance between a and b in bytes: insertions,
// deletions, substitutions and transpositions of two neighbours ("stpo"
// is one edit from "stop"), each counting one (optimal string alignment).
func Distance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

func abs(n int) int { return max(n, -n) }
