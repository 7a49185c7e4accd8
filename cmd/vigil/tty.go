package main

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// The escape sequences a full-screen view uses (VT100 and xterm's, which
// every terminal an SSH session lands in speaks).
const (
	escAltScreen   = "\x1b[?1049h" // the alternate screen: the shell's screen comes back at the end
	escMainScreen  = "\x1b[?1049l"
	escHideCursor  = "\x1b[?25l"
	escShowCursor  = "\x1b[?25h"
	escHome        = "\x1b[H"
	escClearLine   = "\x1b[K" // to the end of the line
	escClearBelow  = "\x1b[J" // to the end of the screen
	escReverse     = "\x1b[7m"
	escReset       = "\x1b[0m"
	escBold        = "\x1b[1m"
	escDim         = "\x1b[2m"
	escNoAutoWrap  = "\x1b[?7l" // a line one column too long must not scroll the screen
	escAutoWrap    = "\x1b[?7h"
	escEnterScreen = escAltScreen + escHideCursor + escNoAutoWrap
	escLeaveScreen = escReset + escAutoWrap + escShowCursor + escMainScreen
)

// terminal is a terminal taken over for a full-screen view: raw input
// (keys one by one, no echo, Ctrl-C a key), the alternate screen, no
// cursor. restore gives it back exactly as it was found.
type terminal struct {
	in, out *os.File
	saved   unix.Termios
}

// errNotTerminal: a full-screen view needs its input and output on a
// terminal.
var errNotTerminal = errors.New("standard input and output must be a terminal")

// openTerminal takes over in and out, which must be a terminal.
func openTerminal(in, out *os.File) (*terminal, error) {
	saved, err := unix.IoctlGetTermios(int(in.Fd()), unix.TCGETS)
	if err != nil {
		return nil, errNotTerminal
	}
	if _, err := unix.IoctlGetTermios(int(out.Fd()), unix.TCGETS); err != nil {
		return nil, errNotTerminal
	}
	raw := *saved
	// As cfmakeraw, but output processing stays on (a "\n" still returns
	// the carriage) and a read waits for one byte at least.
	raw.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	raw.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	raw.Cflag &^= unix.CSIZE | unix.PARENB
	raw.Cflag |= unix.CS8
	raw.Cc[unix.VMIN], raw.Cc[unix.VTIME] = 1, 0
	if err := unix.IoctlSetTermios(int(in.Fd()), unix.TCSETS, &raw); err != nil {
		return nil, err
	}
	t := &terminal{in: in, out: out, saved: *saved}
	if _, err := out.WriteString(escEnterScreen); err != nil {
		t.restore()
		return nil, err
	}
	return t, nil
}

// restore gives the terminal back as openTerminal found it: its modes,
// the shell's screen, the cursor. It may be called more than once.
func (t *terminal) restore() {
	t.out.WriteString(escLeaveScreen)
	unix.IoctlSetTermios(int(t.in.Fd()), unix.TCSETSW, &t.saved)
}

// size is the terminal's width and height; 80x24 when it cannot say.
func (t *terminal) size() (width, height int) {
	ws, err := unix.IoctlGetWinsize(int(t.out.Fd()), unix.TIOCGWINSZ)
	if err != nil || ws.Col == 0 || ws.Row == 0 {
		return 80, 24
	}
	return int(ws.Col), int(ws.Row)
}

// withTerminal runs view on the terminal in and out, and restores the
// terminal however view ends: a return, or a panic, which goes on once
// the terminal is back (so that its message is readable on the shell's
// screen).
func withTerminal(in, out *os.File, view func(t *terminal) error) error {
	t, err := openTerminal(in, out)
	if err != nil {
		return err
	}
	defer t.restore()
	return view(t)
}

// The keys a full-screen view reads, beyond printable characters.
const (
	keyUp       = "up"
	keyDown     = "down"
	keyPageUp   = "pgup"
	keyPageDown = "pgdn"
	keyHome     = "home"
	keyEnd      = "end"
	keyEnter    = "enter"
	keyEscape   = "esc"
	keyBack     = "backspace"
	keyCtrlC    = "ctrl-c"
	keyCtrlL    = "ctrl-l"
)

// decodeKeys splits what one read of a raw terminal returned into keys:
// printable characters as themselves, the rest by the names above;
// unknown sequences are dropped. A lone ESC is the Escape key (an arrow's
// sequence arrives in one read).
func decodeKeys(b []byte) []string {
	seqs := map[string]string{
		"\x1b[A": keyUp, "\x1b[B": keyDown, "\x1bOA": keyUp, "\x1bOB": keyDown,
		"\x1b[5~": keyPageUp, "\x1b[6~": keyPageDown, "\x1b[H": keyHome, "\x1b[F": keyEnd,
		"\x1b[1~": keyHome, "\x1b[4~": keyEnd, "\x1bOH": keyHome, "\x1bOF": keyEnd,
	}
	var keys []string
	for len(b) > 0 {
		switch c := b[0]; {
		case c == 0x1b:
			if len(b) == 1 {
				return append(keys, keyEscape)
			}
			n := seqLen(b)
			if k, ok := seqs[string(b[:n])]; ok {
				keys = append(keys, k)
			}
			b = b[n:]
			continue
		case c == '\r' || c == '\n':
			keys = append(keys, keyEnter)
		case c == 0x7f || c == 0x08:
			keys = append(keys, keyBack)
		case c == 0x03:
			keys = append(keys, keyCtrlC)
		case c == 0x0c:
			keys = append(keys, keyCtrlL)
		case c >= 0x20 && c < 0x7f:
			keys = append(keys, string(c))
		}
		b = b[1:]
	}
	return keys
}

// seqLen is the length of the escape sequence b begins with: ESC [ ...
// up to a final byte from @ to ~, ESC O and one byte, or ESC and one.
func seqLen(b []byte) int {
	switch {
	case len(b) >= 2 && b[1] == '[':
		for i := 2; i < len(b); i++ {
			if b[i] >= 0x40 && b[i] <= 0x7e {
				return i + 1
			}
		}
		return len(b)
	case len(b) >= 3 && b[1] == 'O':
		return 3
	}
	return min(2, len(b))
}
