package procinit

import "testing"

func TestRotationCut(t *testing.T) {
	for _, tc := range []struct {
		name      string
		data      string
		size      int64
		lineStart bool
		want      int
	}{
		{"fits", "ab\ncd\n", 0, true, 6},
		{"fits exactly", "ab\ncd\n", 4, true, 6},
		{"whole lines that fit", "ab\ncd\nef\n", 4, true, 6},
		{"no line fits: rotate first", "abcdef\n", 5, true, 0},
		{"finish the open line", "b\ncd\nef\n", 9, false, 2},
		{"open line without end at the size", "bbbbbbbbb", 6, false, 4},
		{"long line in an empty file", "aaaaaaaaaaaa\n", 0, true, 10},
		{"full file, line start", "ab\n", 10, true, 0},
		{"past the size, open line", "abcd", 12, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &copier{rot: &LogRotation{MaxSize: 10, Keep: 1}, lineStart: tc.lineStart}
			if got := c.rotationCut([]byte(tc.data), tc.size); got != tc.want {
				t.Fatalf("cut %d, want %d", got, tc.want)
			}
		})
	}
	c := &copier{retryIn: 5, rot: &LogRotation{MaxSize: 10, Keep: 1}}
	if got := c.rotationCut([]byte("abc\n"), 20); got != 4 {
		t.Fatalf("a rotation that failed is retried at once: cut %d", got)
	}
}
