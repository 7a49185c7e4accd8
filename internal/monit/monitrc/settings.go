package monitrc

import (
	"strings"
	"time"

	"github.com/vigil-bosh/vigil/internal/suggest"
)

// set reads one set statement.
func (p *parser) set() error {
	t, err := p.word("a setting after set")
	if err != nil {
		return err
	}
	switch t.low {
	case "daemon":
		n, _, err := p.number("a number of seconds after set daemon")
		if err != nil {
			return err
		}
		if n == 0 {
			return p.errf(t, "set daemon needs a positive interval")
		}
		p.out.Cycle = time.Duration(n) * time.Second
		if p.is("start", "start-delay") {
			p.pos++
			if p.is("delay") {
				p.pos++
			}
			_, _, err = p.number("a start delay")
		}
		return err
	case "httpd":
		return p.httpd()
	case "alert":
		w, err := p.word("an address after set alert")
		if err != nil {
			return err
		}
		p.out.Alerts = append(p.out.Alerts, w.text)
		p.skipAlertOptions()
		return nil
	case "mailserver":
		return p.mailserver()
	case "logfile", "pidfile", "idfile", "statefile", "init":
		if t.low != "init" {
			_, err = p.word("a value after set " + t.low)
		}
		return err
	case "mail-format":
		if p.peek().kind != tBlock {
			return p.unexpected("{ after set mail-format")
		}
		p.pos++
		return nil
	case "eventqueue":
		for p.is("basedir", "slots") {
			p.pos++
			if _, err := p.word("a value"); err != nil {
				return err
			}
		}
		return nil
	}
	settings := []string{"daemon", "httpd", "alert", "mailserver", "logfile", "pidfile", "idfile", "statefile", "init",
		"mail-format", "eventqueue"}
	return p.errf(t, "syntax error: unknown setting %q%s", t.text, suggest.Phrase(t.text, settings, "settings"))
}

func (p *parser) skipAlertOptions() {
	if p.is("not") {
		p.pos++
	}
	if p.peek().kind == tBlock {
		p.pos++
	}
}

func (p *parser) httpd() error {
	h := &HTTPD{Port: 2812}
	for {
		switch {
		case p.is("port"):
			p.pos++
			n, err := p.port()
			if err != nil {
				return err
			}
			h.Port = n
		case p.is("address", "bind"):
			p.pos++
			w, err := p.word("an address")
			if err != nil {
				return err
			}
			h.Address = w.text
		case p.is("allow"):
			p.pos++
			if p.is("cleartext") {
				p.pos++
				w, err := p.word("a credentials file")
				if err != nil {
					return err
				}
				h.Cleartext = append(h.Cleartext, w.text)
				continue
			}
			w, err := p.word("a host or user:password after allow")
			if err != nil {
				return err
			}
			if u, pw, ok := strings.Cut(w.text, ":"); ok {
				h.Users = append(h.Users, Credential{User: u, Password: pw})
			} else {
				h.Allow = append(h.Allow, w.text)
			}
			if p.is("read-only", "readonly") {
				p.pos++
			}
		default:
			p.out.HTTPD = h
			return nil
		}
	}
}

func (p *parser) mailserver() error {
	m := &MailServer{Port: 25, Timeout: 5 * time.Second}
	w, err := p.word("a mail server host")
	if err != nil {
		return err
	}
	m.Host = w.text
	for {
		switch {
		case p.is("port"):
			p.pos++
			n, err := p.port()
			if err != nil {
				return err
			}
			m.Port = n
		case p.is("timeout"):
			p.pos++
			d, err := p.seconds()
			if err != nil {
				return err
			}
			m.Timeout = d
		default:
			if p.out.MailServer == nil {
				p.out.MailServer = m
			}
			return nil
		}
	}
}
