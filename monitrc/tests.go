package monitrc

import (
	"strconv"
	"strings"
)

// resources are the words a resource test starts with.
var resources = []string{"totalmem", "memory", "mem", "cpu", "totalcpu", "children", "loadavg"}

// ifTest reads `if CONDITION then ACTION [else if succeeded then ACTION]`.
func (p *parser) ifTest(at token) error {
	tst := Test{Line: at.line}
	var err error
	switch {
	case p.is("failed"):
		p.pos++
		tst.Kind = TestConnection
		err = p.connection(&tst)
	case p.is(resources...):
		tst.Kind = TestResource
		err = p.resource(&tst)
	case p.peek().kind == tWord && isNumber(p.peek().text):
		tst.Kind = TestRestarts
		err = p.restarts(&tst)
	default:
		tst.Kind = TestOther
		err = p.other(&tst)
	}
	if err != nil {
		return err
	}
	if tst.Action, err = p.action(tst.Kind == TestRestarts); err != nil {
		return err
	}
	if p.is("else") {
		p.pos++
		if _, err := p.expect("if"); err != nil {
			return err
		}
		if _, err := p.expect("succeeded", "passed", "recovered"); err != nil {
			return err
		}
		if _, err := p.expect("then"); err != nil {
			return err
		}
		if _, err := p.action(false); err != nil {
			return err
		}
	}
	p.svc.Tests = append(p.svc.Tests, tst)
	return nil
}

func isNumber(s string) bool {
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

// cycles reads an optional `[N] M cycles` (for N cycles, or N times within
// M cycles) and stores it in t.
func (p *parser) cycles(t *Test) error {
	if p.peek().kind != tWord || !isNumber(p.peek().text) {
		return nil
	}
	n, _, err := p.number("a number of cycles")
	if err != nil {
		return err
	}
	m := n
	if !p.is("cycle", "cycles") {
		if m, _, err = p.number("a number of cycles"); err != nil {
			return err
		}
	}
	if _, err := p.expect("cycle", "cycles"); err != nil {
		return err
	}
	if n > m || m == 0 {
		return p.errf(p.toks[p.pos-1], "%d times within %d cycles is impossible", n, m)
	}
	t.Failures, t.Cycles = n, m
	return nil
}

func (p *parser) connection(t *Test) error {
	var parts []string
	t.Timeout = DefaultConnTimeout
	for !p.is("then") {
		if p.eof() {
			return p.unexpected("then")
		}
		switch {
		case p.is("host"):
			p.pos++
			w, err := p.word("a host")
			if err != nil {
				return err
			}
			t.Host = w.text
		case p.is("port"):
			p.pos++
			n, err := p.port()
			if err != nil {
				return err
			}
			t.Port = n
		case p.is("unixsocket", "unix"):
			p.pos++
			w, err := p.word("a socket path")
			if err != nil {
				return err
			}
			t.Socket = w.text
		case p.is("type"):
			p.pos++
			w, err := p.expect("tcp", "udp", "tcpssl")
			if err != nil {
				return err
			}
			t.Type = w.low
		case p.is("proto", "protocol"):
			p.pos++
			w, err := p.word("a protocol")
			if err != nil {
				return err
			}
			t.Protocol = strings.ToLower(w.text)
		case p.is("request"):
			p.pos++
			w, err := p.word("a request path")
			if err != nil {
				return err
			}
			t.Request = w.text
		case p.is("timeout"):
			p.pos++
			d, err := p.seconds()
			if err != nil {
				return err
			}
			t.Timeout = d
		case p.peek().kind == tWord && isNumber(p.peek().text):
			if err := p.cycles(t); err != nil {
				return err
			}
		default:
			return p.unexpected("a connection test option or then")
		}
	}
	p.pos++ // then
	if t.Port == 0 && t.Socket == "" {
		return p.errf(p.toks[p.pos-1], "connection test needs a port or a unix socket")
	}
	if t.Socket != "" {
		parts = append(parts, "unixsocket "+t.Socket)
	} else {
		host := t.Host
		if host == "" {
			host = "localhost"
		}
		parts = append(parts, host+":"+strconv.Itoa(t.Port))
	}
	if t.Protocol != "" {
		parts = append(parts, "protocol "+t.Protocol+" "+t.Request)
	}
	t.Text = "failed " + strings.TrimSpace(strings.Join(parts, " "))
	return nil
}

// resource reads `RESOURCE (>|<|=|!=) N [unit|%] [cycles] then`.
func (p *parser) resource(t *Test) error {
	t.Resource = p.next().low
	if !p.is(">", "<", "!=", "<>", "==", "gt", "lt", "greater", "less", "equal", "not") {
		return p.unexpected("a comparison")
	}
	t.Operator = p.next().low
	nt := p.next()
	num := strings.TrimSuffix(nt.text, "%")
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || nt.kind != tWord {
		return p.errf(nt, "syntax error: expected a number, got %q", nt.text)
	}
	t.Limit = v
	t.Percent = strings.HasSuffix(nt.text, "%")
	units := map[string]float64{"b": 1.0 / 1024, "byte": 1.0 / 1024, "bytes": 1.0 / 1024,
		"kb": 1, "k": 1, "kilobyte": 1, "kilobytes": 1, "mb": 1024, "m": 1024, "megabyte": 1024,
		"megabytes": 1024, "gb": 1024 * 1024, "g": 1024 * 1024, "gigabyte": 1024 * 1024, "gigabytes": 1024 * 1024}
	switch {
	case p.is("%"):
		p.pos++
		t.Percent = true
	case p.peek().kind == tWord && units[p.peek().low] != 0:
		t.Limit *= units[p.next().low]
	}
	if err := p.cycles(t); err != nil {
		return err
	}
	if _, err := p.expect("then"); err != nil {
		return err
	}
	unit := " kB"
	if t.Percent {
		unit = "%"
	}
	t.Text = t.Resource + " " + t.Operator + " " + strconv.FormatFloat(t.Limit, 'f', -1, 64) + unit
	return nil
}

// restarts reads `N restart(s) [within] M cycle(s) then`.
func (p *parser) restarts(t *Test) error {
	n, _, err := p.number("a number of restarts")
	if err != nil {
		return err
	}
	if _, err := p.expect("restart", "restarts"); err != nil {
		return err
	}
	m, _, err := p.number("a number of cycles")
	if err != nil {
		return err
	}
	if _, err := p.expect("cycle", "cycles"); err != nil {
		return err
	}
	if _, err := p.expect("then"); err != nil {
		return err
	}
	t.Failures, t.Cycles = n, m
	t.Text = strconv.Itoa(n) + " restarts within " + strconv.Itoa(m) + " cycles"
	return nil
}

// other reads any other condition up to then, keeping its text.
func (p *parser) other(t *Test) error {
	var words []string
	for !p.is("then") {
		if p.eof() {
			return p.unexpected("then")
		}
		words = append(words, p.next().text)
	}
	p.pos++
	t.Text = strings.Join(words, " ")
	return nil
}

// action reads ACTION after then; timeout is allowed for restart rates.
func (p *parser) action(rate bool) (Action, error) {
	words := []string{"alert", "restart", "start", "stop", "unmonitor", "exec"}
	if rate {
		words = append(words, "timeout")
	}
	w, err := p.expect(words...)
	if err != nil {
		return Action{}, err
	}
	a := Action{Kind: ActionKind(w.low)}
	if a.Kind == ActExec {
		if a.Exec, err = p.program(); err != nil {
			return Action{}, err
		}
	}
	return a, nil
}
