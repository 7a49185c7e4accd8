package monitrc

import (
	"strconv"
	"strings"
)

// connection reads the rest of a connection test (`failed [host H] port N
// [type T] [protocol P] [request R] ...` up to `then`).
func (p *parser) connection(t *Test) error {
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
		case p.is("port", "portnumber"):
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
		case p.is("send", "expect"):
			kind := p.next().low
			w, err := p.word("a string after " + kind)
			if err != nil {
				return err
			}
			t.Generic = append(t.Generic, Exchange{Send: kind == "send", Text: w.text})
			t.Protocol = "generic"
		case p.is("hostheader"):
			p.pos++
			if _, err := p.word("a host header"); err != nil {
				return err
			}
		case p.is("timeout"):
			p.pos++
			d, err := p.seconds()
			if err != nil {
				return err
			}
			t.Timeout = d
		case p.peek().kind == tWord && isNumber(p.peek().text):
			if err := p.cycles(&t.Failures, &t.Cycles); err != nil {
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
	if t.Host == "" && t.Socket == "" {
		t.Host = "localhost" // as monit: a check host's own address, else localhost
		if p.svc.Type == TypeHost && p.svc.Address != "" {
			t.Host = p.svc.Address
		}
	}
	if t.Socket != "" {
		t.Text = "failed unixsocket " + t.Socket
	} else {
		t.Text = "failed " + t.Host + ":" + strconv.Itoa(t.Port) + t.Request
	}
	return nil
}
