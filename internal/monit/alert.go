package monit

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/smtp"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/vigil-bosh/vigil/internal/atomicfile"
)

// Alert is one monit event to mail.
type Alert struct {
	Service, Event, Action, Description string
	Date                                time.Time
}

// AlertConfig says where alerts go.
type AlertConfig struct {
	Dir      string   // the on-disk queue
	Max      int      // queued alerts kept at most; older ones are dropped
	Server   string   // host:port of the mail server
	To       []string // recipients (set alert)
	Hostname string
	Timeout  time.Duration // per delivery; zero means 15s
	Retry    time.Duration // between attempts while the server is down; zero means 10s
}

// Alerter queues alerts on disk and mails them, in order, in monit's
// format. Send never blocks; Run delivers.
type Alerter struct {
	cfg AlertConfig
	in  chan Alert
	seq atomic.Uint64
}

// NewAlerter returns an alerter for cfg.
func NewAlerter(cfg AlertConfig) *Alerter {
	if cfg.Max <= 0 {
		cfg.Max = 5000
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 15 * time.Second
	}
	if cfg.Retry <= 0 {
		cfg.Retry = 10 * time.Second
	}
	if cfg.Hostname == "" {
		cfg.Hostname = "localhost"
	}
	return &Alerter{cfg: cfg, in: make(chan Alert, 256)}
}

// Send queues a; when the in-memory buffer is full the alert is dropped.
func (a *Alerter) Send(al Alert) bool {
	if al.Date.IsZero() {
		al.Date = time.Now()
	}
	select {
	case a.in <- al:
		return true
	default:
		return false
	}
}

// Mail renders an alert as monit's mail, with the agent's mail-format.
func Mail(al Alert, from string, to []string, hostname string, id string) string {
	date := al.Date.Format("Mon, 02 Jan 2006 15:04:05 -0700")
	var b strings.Builder
	fmt.Fprintf(&b, "From: %s\r\nTo: %s\r\nSubject: Monit Alert\r\nDate: %s\r\n", from, strings.Join(to, ", "), date)
	fmt.Fprintf(&b, "X-Mailer: monit %s\r\nMime-Version: 1.0\r\nContent-Type: text/plain; charset=\"iso-8859-1\"\r\n", Version)
	fmt.Fprintf(&b, "Content-Transfer-Encoding: 8bit\r\nMessage-id: <%s@%s>\r\n\r\n", id, hostname)
	fmt.Fprintf(&b, "Service: %s\r\nEvent: %s\r\nAction: %s\r\nDate: %s\r\nDescription: %s\r\n",
		oneLine(al.Service), oneLine(al.Event), oneLine(al.Action), date, oneLine(al.Description))
	return b.String()
}

func oneLine(s string) string { return strings.NewReplacer("\r", " ", "\n", " ").Replace(s) }

// Run writes queued alerts to disk and delivers the disk queue until ctx
// is done; undelivered alerts stay on disk for the next run.
func (a *Alerter) Run(ctx context.Context) {
	retry := time.NewTimer(0)
	defer retry.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case al := <-a.in:
			if err := a.enqueue(al); err == nil {
				a.deliver(ctx, retry)
			}
		case <-retry.C:
			a.deliver(ctx, retry)
		}
	}
}

func (a *Alerter) enqueue(al Alert) error {
	if err := os.MkdirAll(a.cfg.Dir, 0o700); err != nil {
		return fmt.Errorf("alert queue: %w", err)
	}
	id := fmt.Sprintf("%d.%d.%d", al.Date.Unix(), os.Getpid(), a.seq.Add(1))
	name := fmt.Sprintf("%020d-%s", al.Date.UnixNano(), id)
	body := Mail(al, "monit@localhost", a.cfg.To, a.cfg.Hostname, id)
	// Written whole (mode 0600): never through a symlink.
	if err := atomicfile.Write(filepath.Join(a.cfg.Dir, name), []byte(body), 0o600); err != nil {
		return fmt.Errorf("alert queue: %w", err)
	}
	queued := a.queued()
	for len(queued) > a.cfg.Max { // bounded: the oldest go first
		_ = os.Remove(filepath.Join(a.cfg.Dir, queued[0]))
		queued = queued[1:]
	}
	return nil
}

func (a *Alerter) queued() []string {
	ents, _ := os.ReadDir(a.cfg.Dir)
	var out []string
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), ".") && e.Type().IsRegular() {
			out = append(out, e.Name())
		}
	}
	slices.Sort(out)
	return out
}

// deliver mails the queue in order; at the first failure it re-arms the
// retry timer and stops.
func (a *Alerter) deliver(ctx context.Context, retry *time.Timer) {
	for _, name := range a.queued() {
		if ctx.Err() != nil {
			return
		}
		path := filepath.Join(a.cfg.Dir, name)
		body, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		if err := a.mail(body); err != nil {
			retry.Reset(a.cfg.Retry)
			return
		}
		_ = os.Remove(path)
	}
}

func (a *Alerter) mail(body []byte) error {
	conn, err := net.DialTimeout("tcp", a.cfg.Server, a.cfg.Timeout)
	if err != nil {
		return fmt.Errorf("mail server: %w", err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(a.cfg.Timeout))
	host, _, _ := net.SplitHostPort(a.cfg.Server)
	c, err := smtp.NewClient(conn, host)
	if err != nil {
		return fmt.Errorf("mail server: %w", err)
	}
	defer c.Close()
	if err := c.Hello(a.cfg.Hostname); err != nil {
		return fmt.Errorf("mail server: %w", err)
	}
	if err := c.Mail("monit@localhost"); err != nil {
		return fmt.Errorf("mail server: %w", err)
	}
	if len(a.cfg.To) == 0 {
		return errors.New("no alert recipient")
	}
	for _, to := range a.cfg.To {
		if err := c.Rcpt(to); err != nil {
			return fmt.Errorf("mail server: %w", err)
		}
	}
	w, err := c.Data()
	if err != nil {
		return fmt.Errorf("mail server: %w", err)
	}
	if _, err := w.Write(body); err != nil {
		return fmt.Errorf("mail server: %w", err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("mail server: %w", err)
	}
	return c.Quit()
}

// MailServerAddr joins a mail server's host and port.
func MailServerAddr(host string, port int) string {
	return net.JoinHostPort(host, strconv.Itoa(port))
}
