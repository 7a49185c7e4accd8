package monitrc

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vigil-bosh/vigil/internal/suggest"
)

// File is what one control file says, before includes and dependencies are
// resolved.
type File struct {
	Name       string
	Cycle      time.Duration // 0 when the file does not say
	HTTPD      *HTTPD
	Alerts     []string
	MailServer *MailServer
	Includes   []string // include patterns, in order
	// IncludeAt gives, for each of Includes, how many of Services come
	// before it: monit reads an include where it stands, so what it
	// includes comes between those services and the rest.
	IncludeAt []int
	Services  []*Service
}

// Parse reads one control file. Any error makes the whole file invalid:
// the first one is returned, naming file and line.
func Parse(name string, src []byte) (*File, error) {
	toks, err := lex(name, src)
	if err != nil {
		return nil, err
	}
	p := &parser{file: name, toks: toks, out: &File{Name: name}}
	if err := p.parse(); err != nil {
		return nil, err
	}
	return p.out, nil
}

type parser struct {
	file string
	toks []token
	pos  int
	out  *File
	svc  *Service // the check block being read
}

func (p *parser) eof() bool { return p.pos >= len(p.toks) }

func (p *parser) peek() token {
	if p.eof() {
		line := 1
		if n := len(p.toks); n > 0 {
			line = p.toks[n-1].line
		}
		return token{kind: tWord, line: line}
	}
	return p.toks[p.pos]
}

func (p *parser) next() token { t := p.peek(); p.pos++; return t }

// is reports whether the next token is a bare word among words.
func (p *parser) is(words ...string) bool {
	t := p.peek()
	if p.eof() || t.kind != tWord {
		return false
	}
	for _, w := range words {
		if t.low == w {
			return true
		}
	}
	return false
}

func (p *parser) errf(t token, format string, args ...any) error {
	return &Error{File: p.file, Line: t.line, Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) unexpected(what string) error {
	t := p.peek()
	if p.eof() {
		return p.errf(t, "syntax error: unexpected end of file, expected %s", what)
	}
	return p.errf(t, "syntax error: unexpected %q, expected %s", t.text, what)
}

// unexpectedOf is unexpected with, for a word, the one of known it is a
// slip of ("did you mean"), else known listed as what (when what is not
// empty: the list is worth reading only where the expected words are not
// already named).
func (p *parser) unexpectedOf(expected string, known []string, what string) error {
	err := p.unexpected(expected)
	t := p.peek()
	if p.eof() || t.kind != tWord {
		return err
	}
	e := err.(*Error)
	if c, ok := suggest.Closest(t.text, known); ok {
		e.Msg += fmt.Sprintf(" (did you mean %q?)", c)
	} else if what != "" {
		e.Msg += suggest.Known(known, what)
	}
	return e
}

func (p *parser) expect(words ...string) (token, error) {
	if !p.is(words...) {
		return token{}, p.unexpectedOf(strings.Join(words, " or "), words, "")
	}
	return p.next(), nil
}

// word reads any bare word or string (a name, a path, an address).
func (p *parser) word(what string) (token, error) {
	if p.eof() || p.peek().kind == tBlock {
		return token{}, p.unexpected(what)
	}
	return p.next(), nil
}

// port reads a port number (1-65535) after the word "port".
func (p *parser) port() (int, error) {
	n, tk, err := p.number("a port number")
	if err != nil {
		return 0, err
	}
	if n < 1 || n > 65535 {
		return 0, p.errf(tk, "port %d out of range", n)
	}
	return n, nil
}

func (p *parser) number(what string) (int, token, error) {
	t := p.peek()
	n, err := strconv.Atoi(t.text)
	if p.eof() || t.kind != tWord || err != nil || n < 0 {
		return 0, t, p.unexpected(what)
	}
	p.pos++
	return n, t, nil
}

// seconds reads "N [second(s)]".
func (p *parser) seconds() (time.Duration, error) {
	n, _, err := p.number("a number of seconds")
	if err != nil {
		return 0, err
	}
	if p.is("second", "seconds", "s") {
		p.pos++
	}
	return time.Duration(n) * time.Second, nil
}

func (p *parser) parse() error {
	for !p.eof() {
		t := p.peek()
		switch {
		case p.is("set"):
			p.svc = nil
			p.pos++
			if err := p.set(); err != nil {
				return err
			}
		case p.is("include"):
			p.svc = nil
			p.pos++
			w, err := p.word("a file pattern after include")
			if err != nil {
				return err
			}
			p.out.Includes = append(p.out.Includes, w.text)
			p.out.IncludeAt = append(p.out.IncludeAt, len(p.out.Services))
		case p.is("check"):
			p.pos++
			if err := p.check(t); err != nil {
				return err
			}
		case p.svc != nil:
			if err := p.statement(); err != nil {
				return err
			}
		default:
			return p.unexpectedOf("set, include or check", []string{"set", "include", "check"}, "")
		}
	}
	return nil
}

func (p *parser) check(at token) error {
	kinds := map[string]ServiceType{
		"process": TypeProcess, "file": TypeFile, "host": TypeHost, "system": TypeSystem,
		"filesystem": TypeFilesystem, "device": TypeFilesystem, "directory": TypeDirectory, "fifo": TypeFifo,
	}
	kt, err := p.word("a service type after check")
	if err != nil {
		return err
	}
	typ, ok := kinds[kt.low]
	var nt token
	switch {
	case ok && kt.kind == tWord:
		if nt, err = p.word("a service name"); err != nil {
			return err
		}
	case p.is("pidfile", "path", "matching", "match"):
		// "check NAME with pidfile P": process is the default type.
		typ, nt = TypeProcess, kt
	default:
		names := slices.Sorted(maps.Keys(kinds))
		return p.errf(kt, "syntax error: unknown service type %q%s", kt.text, suggest.Phrase(kt.text, names, "types"))
	}
	if nt.kind != tWord || nt.text == "" || strings.ContainsAny(nt.text, "/\x00") {
		return p.errf(nt, "invalid service name %q", nt.text)
	}
	s := &Service{Name: nt.text, Type: typ, File: p.file, Line: at.line, Mode: "active"}
	p.out.Services = append(p.out.Services, s)
	p.svc = s
	// The object of the check may follow at once or as a later statement.
	return nil
}

// statement reads one statement inside a check block.
func (p *parser) statement() error {
	s := p.svc
	t := p.next()
	if t.kind != tWord {
		return p.errf(t, "syntax error: unexpected %q in check %s", t.text, s.Name)
	}
	statements := []string{"pidfile", "path", "address", "start", "stop", "group", "depends", "mode", "every",
		"alert", "noalert", "if", "ignore"}
	switch t.low {
	case "pidfile":
		w, err := p.word("a pid file path")
		s.PidFile = w.text
		return err
	case "path":
		w, err := p.word("a path")
		if s.Type == TypeProcess { // check process NAME path P: the pid file
			s.PidFile = w.text
		} else {
			s.Path = w.text
		}
		return err
	case "address":
		w, err := p.word("an address")
		s.Address = w.text
		return err
	case "matching":
		return p.errf(t, "check process %s matching: process matching is not supported; use a pid file", s.Name)
	case "start", "stop":
		prog, err := p.program()
		if t.low == "start" {
			s.Start = prog
		} else {
			s.Stop = prog
		}
		return err
	case "group":
		w, err := p.word("a group name")
		s.Groups = append(s.Groups, w.text)
		return err
	case "depends", "depend":
		for {
			w, err := p.word("a service name after depends on")
			if err != nil {
				return err
			}
			s.DependsOn = append(s.DependsOn, w.text)
			s.DependLines = append(s.DependLines, w.line)
			if !p.is(",") {
				return nil
			}
			p.pos++
		}
	case "mode":
		w, err := p.expect("active", "passive", "manual")
		s.Mode = w.low
		return err
	case "every":
		n, nt, err := p.number("a number of cycles after every")
		if err != nil {
			return err
		}
		if _, err := p.expect("cycle", "cycles"); err != nil {
			return err
		}
		if n < 1 {
			return p.errf(nt, "every needs at least one cycle")
		}
		s.Every = n
		return nil
	case "alert", "noalert":
		// alert ADDRESS [not] [{ events }] [mail-format { ... }] [reminder N [cycles]]:
		// accepted; alerts go to set alert's recipients.
		if _, err := p.word("an address"); err != nil {
			return err
		}
		if p.is("not") {
			p.pos++
		}
		if p.peek().kind == tBlock {
			p.pos++
		}
		if p.is("mail-format") {
			p.pos++
			if p.peek().kind != tBlock {
				return p.unexpected("{ after mail-format")
			}
			p.pos++
		}
		if p.is("reminder") {
			p.pos++
			if _, _, err := p.number("a number after reminder"); err != nil {
				return err
			}
			if p.is("cycle", "cycles") {
				p.pos++
			}
		}
		return nil
	case "if", "ignore":
		return p.ifTest(t)
	}
	return p.errf(t, "syntax error: unexpected %q in check %s%s", t.text, s.Name, suggest.Phrase(t.text, statements, "statements"))
}

// program reads `"argv" [as uid U [and] gid G] [with timeout N seconds]`.
func (p *parser) program() (*Program, error) {
	st := p.peek()
	if p.eof() || st.kind != tString {
		return nil, p.unexpectedOf("a quoted program", []string{"program"}, "")
	}
	p.pos++
	// Between double quotes, the words are the arguments; a single-quoted
	// program is one argument, the whole text (as monit's lexer reads it).
	argv := []string{st.text}
	if st.quote == '"' {
		var err error
		if argv, err = splitProgram(st.text); err != nil {
			return nil, p.errf(st, "%v", err)
		}
	} else if strings.TrimSpace(st.text) == "" {
		return nil, p.errf(st, "empty program")
	}
	prog := &Program{Argv: argv, Timeout: DefaultExecTimeout}
	for {
		switch {
		case p.is("uid"):
			p.pos++
			w, err := p.word("a user after uid")
			if err != nil {
				return nil, err
			}
			prog.UID = w.text
		case p.is("gid"):
			p.pos++
			w, err := p.word("a group after gid")
			if err != nil {
				return nil, err
			}
			prog.GID = w.text
		case p.is("timeout"):
			p.pos++
			d, err := p.seconds()
			if err != nil {
				return nil, err
			}
			prog.Timeout = d
		default:
			return prog, nil
		}
	}
}
