package monitrc

import (
	"fmt"
	"strings"
)

// tokKind tells a bare word from a quoted string and a brace block.
type tokKind int

const (
	tWord   tokKind = iota // a bare word, lower-cased in low
	tString                // text between double (or single) quotes
	tBlock                 // text between { and } (set mail-format)
)

type token struct {
	kind  tokKind
	text  string // as written (without quotes or braces)
	low   string // lower-cased text, for keyword matching
	line  int
	quote byte // the quote of a string: '"' or '\''
}

// noise tells monit's filler words (l.l): they may appear anywhere and mean
// nothing, so the lexer drops them.
func noise(w string) bool {
	switch w {
	case "is", "as", "are", "for", "on", "only", "with", "within", "without", "program", "programs",
		"and", "has", "using", "use", "the", "sum", "than", "usage", "was", "times", "but", "of",
		"does", "=":
		return true
	}
	return false
}

// lex splits a control file into tokens, dropping comments and noise words.
func lex(file string, src []byte) ([]token, error) {
	var out []token
	s := string(src)
	line := 1
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\n':
			line++
			i++
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
			i++
		case c == '#':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c == '"' || c == '\'':
			// A string ends on its line: one that runs on is unterminated,
			// reported where it starts (monit reads on to the next quote).
			end := strings.IndexAny(s[i+1:], string(c)+"\n")
			if end < 0 || s[i+1+end] == '\n' {
				return nil, &Error{File: file, Line: line, Msg: "unterminated string"}
			}
			text := s[i+1 : i+1+end]
			out = append(out, token{kind: tString, text: text, low: strings.ToLower(text), line: line, quote: c})
			i += end + 2
		case c == '{':
			end := strings.IndexByte(s[i+1:], '}')
			if end < 0 {
				return nil, &Error{File: file, Line: line, Msg: "unterminated { block"}
			}
			text := s[i+1 : i+1+end]
			out = append(out, token{kind: tBlock, text: text, low: strings.ToLower(text), line: line})
			line += strings.Count(text, "\n")
			i += end + 2
		case c == ',' || c == '>' || c == '<' || c == '=' || c == '!' || c == '}':
			j := i + 1
			if j < len(s) && c != ',' && c != '}' && (s[j] == '=' || (c == '<' && s[j] == '>')) {
				j++
			}
			w := s[i:j]
			if !noise(w) {
				out = append(out, token{kind: tWord, text: w, low: w, line: line})
			}
			i = j
		default:
			j := i
			for j < len(s) && !strings.ContainsRune(" \t\r\n\f\v#\"'{},<>=!", rune(s[j])) {
				j++
			}
			w := s[i:j]
			if low := strings.ToLower(w); !noise(low) {
				out = append(out, token{kind: tWord, text: w, low: low, line: line})
			}
			i = j
		}
	}
	return out, nil
}

// splitProgram splits a program string into argv as monit does: on blanks,
// with a single-quoted part kept as one argument without its quotes. There
// is no shell and no expansion.
func splitProgram(s string) ([]string, error) {
	var argv []string
	var cur strings.Builder
	in, quoted := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quoted:
			if c == '\'' {
				quoted = false
			} else {
				cur.WriteByte(c)
			}
		case c == '\'':
			quoted, in = true, true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			if in {
				argv = append(argv, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if quoted {
		return nil, fmt.Errorf("unterminated single quote in %q", s)
	}
	if in {
		argv = append(argv, cur.String())
	}
	if len(argv) == 0 {
		return nil, fmt.Errorf("empty program")
	}
	return argv, nil
}
