package monit

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vigil-bosh/vigil/internal/monit/monitrc"
)

// PortResult is the last result of one connection test.
type PortResult struct {
	Test     int // its index in the service's tests
	OK       bool
	Response time.Duration // how long the test took when it passed
}

// protocolGreeting is what a server speaking protocol proto (monit's name) must
// answer with (empty: nothing is read), false for a protocol vigil does
// not speak.
func protocolGreeting(proto string) (string, bool) {
	switch proto {
	case "default", "http", "generic":
		return "", true
	case "ftp", "smtp":
		return "220", true
	case "ssh":
		return "SSH-", true
	case "pop":
		return "+OK", true
	case "imap":
		return "* OK", true
	case "nntp":
		return "20", true
	}
	return "", false
}

// ProtocolName is monit's word for a test's protocol.
func ProtocolName(t monitrc.Test) string {
	switch p := t.Protocol; p {
	case "":
		return "DEFAULT"
	case "generic":
		return "generic"
	case "postfix-policy":
		return "POSTFIX-POLICY"
	default:
		return strings.ToUpper(p)
	}
}

// PortType is monit's word for a test's socket type.
func PortType(t monitrc.Test) string {
	switch t.Type {
	case "udp":
		return "UDP"
	case "tcpssl":
		return "TCPSSL"
	}
	return "TCP"
}

// PortDescription is a test's address as monit's messages write it.
func PortDescription(t monitrc.Test) string {
	if t.Socket != "" {
		return "UNIX[" + t.Socket + "]"
	}
	return "INET[" + t.Host + ":" + strconv.Itoa(t.Port) + t.Request + "] via " + PortType(t)
}

// connectionTests lists the indexes of svc's connection tests in monit's
// order, the last written first (monit prepends each to its port list).
func connectionTests(svc *monitrc.Service) []int { return reversed(svc, monitrc.TestConnection) }

// connections runs svc's connection tests, one after another each within
// its timeout, and keeps their results for the status.
func (e *Engine) connections(ctx context.Context, svc *monitrc.Service, st *svcState) []posted {
	var out []posted
	var ports []PortResult
	for _, i := range connectionTests(svc) {
		t := svc.Tests[i]
		start := time.Now()
		c := connect(ctx, t)
		ports = append(ports, PortResult{Test: i, OK: !c.failed, Response: time.Since(start)})
		out = append(out, testResult(i, t, c))
	}
	e.mu.Lock()
	st.ports = ports
	e.mu.Unlock()
	return out
}

// checkHost runs a remote host's tests (monit's check_remote_host): its
// ICMP echo tests, then, if the last of them got an answer, its connection
// tests (a host that does not answer pings is taken to be down).
func (e *Engine) checkHost(ctx context.Context, svc *monitrc.Service, st *svcState) []posted {
	var out []posted
	var pings []PortResult
	down := false
	for _, i := range reversed(svc, monitrc.TestICMP) {
		t := svc.Tests[i]
		rtt, err := icmpEcho(ctx, svc.Address, t.Count, t.Timeout)
		switch {
		case errors.Is(err, errNoICMP):
			// monit takes a ping it may not send for an answer; vigil says
			// the test is not performed.
			out = append(out, posted{key: "test" + strconv.Itoa(i), bit: EventData, failed: true,
				message: fmt.Sprintf("vigil cannot send ICMP echo requests (%v): the test 'if failed icmp' (line %d) is not performed", err, t.Line),
				action:  monitrc.Action{Kind: monitrc.ActAlert}, recover: monitrc.Action{Kind: monitrc.ActAlert}})
			down = false
		case err != nil:
			out = append(out, testResult(i, t, checked{EventIcmp, true, "failed ICMP test [Echo Request]"}))
			pings, down = append(pings, PortResult{Test: i}), true
		default:
			out = append(out, testResult(i, t, checked{EventIcmp, false, "succeeded ICMP test [Echo Request]"}))
			pings, down = append(pings, PortResult{Test: i, OK: true, Response: rtt}), false
		}
	}
	e.mu.Lock()
	st.pings = pings
	e.mu.Unlock()
	if down {
		return out
	}
	return append(out, e.connections(ctx, svc, st)...)
}

// errNoICMP is a ping vigil may not send (no raw socket).
var errNoICMP = errors.New("no ICMP socket")

// icmpEcho sends count echo requests to host, one after another, and
// returns the round trip of the first answered, within timeout each.
func icmpEcho(ctx context.Context, host string, count int, timeout time.Duration) (time.Duration, error) {
	addr, err := net.ResolveIPAddr("ip4", host)
	if err != nil {
		return 0, fmt.Errorf("resolve %s: %w", host, err)
	}
	conn, err := net.ListenPacket("ip4:icmp", "")
	if err != nil {
		return 0, fmt.Errorf("%w: %w", errNoICMP, err)
	}
	defer conn.Close()
	defer context.AfterFunc(ctx, func() { _ = conn.SetReadDeadline(time.Unix(1, 0)) })()
	if timeout <= 0 {
		timeout = monitrc.DefaultConnTimeout
	}
	id := os.Getpid() & 0xffff
	buf := make([]byte, 1500)
	for seq := range max(count, 1) {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		start := time.Now()
		if _, err := conn.WriteTo(echoRequest(id, seq), addr); err != nil {
			continue
		}
		_ = conn.SetReadDeadline(start.Add(timeout))
		if ctx.Err() != nil { // ended between the check and the deadline
			return 0, ctx.Err()
		}
		for {
			n, from, err := conn.ReadFrom(buf)
			if err != nil {
				break // this request's time is up
			}
			if isEchoReply(buf[:n], id, seq) && from.String() == addr.String() {
				return time.Since(start), nil
			}
		}
	}
	return 0, errors.New("no echo reply")
}

// echoRequest is an ICMP echo request (RFC 792) with its checksum.
func echoRequest(id, seq int) []byte {
	b := []byte{8, 0, 0, 0, byte(id >> 8), byte(id), byte(seq >> 8), byte(seq), 'v', 'i', 'g', 'i', 'l', 0, 0, 0}
	var sum uint32
	for i := 0; i < len(b); i += 2 {
		sum += uint32(b[i])<<8 | uint32(b[i+1])
	}
	sum = (sum >> 16) + (sum & 0xffff)
	sum += sum >> 16
	c := ^uint16(sum)
	b[2], b[3] = byte(c>>8), byte(c)
	return b
}

// isEchoReply reports whether b (an ICMP message, the IP header stripped)
// is the reply to the request id, seq.
func isEchoReply(b []byte, id, seq int) bool {
	return len(b) >= 8 && b[0] == 0 && b[1] == 0 && int(b[4])<<8|int(b[5]) == id && int(b[6])<<8|int(b[7]) == seq
}

// connect runs one connection test (monit's check_connection): open the
// socket, then speak its protocol.
func connect(ctx context.Context, t monitrc.Test) checked {
	fail := func(format string, a ...any) checked {
		return checked{bit: EventConnection, failed: true, message: fmt.Sprintf(format, a...)}
	}
	greeting, known := protocolGreeting(t.Protocol)
	if t.Protocol == "" {
		known = true
	}
	if !known || t.Type == "tcpssl" {
		return checked{bit: EventData, failed: true,
			message: fmt.Sprintf("vigil does not speak %s over %s: the test 'if %s' (line %d) is not performed",
				ProtocolName(t), PortType(t), t.Text, t.Line)}
	}
	timeout := t.Timeout
	if timeout <= 0 {
		timeout = monitrc.DefaultConnTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	network, addr := "tcp", net.JoinHostPort(t.Host, strconv.Itoa(t.Port))
	switch {
	case t.Socket != "":
		network, addr = "unix", t.Socket
	case t.Type == "udp":
		network = "udp"
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return fail("failed, cannot open a connection to %s", PortDescription(t))
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	// The engine's end (a reload, the shutdown) ends a test in flight: it
	// never holds them up for its timeout.
	defer context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })()
	if t.Type == "udp" && t.Protocol == "" {
		// monit's socket_is_ready: a byte out, and the refusal that comes
		// back from a closed port.
		if err := udpReady(conn); err != nil {
			return fail("connection failed, %s is not ready for i|o -- %s", PortDescription(t), strerror(err))
		}
		return checked{bit: EventConnection, message: "connection succeeded to " + PortDescription(t)}
	}
	if ok := speak(conn, t, greeting); !ok {
		return fail("failed protocol test [%s] at %s", ProtocolName(t), PortDescription(t))
	}
	return checked{bit: EventConnection, message: "connection succeeded to " + PortDescription(t)}
}

// speak runs the protocol over conn: an HTTP request whose status must be
// below 400, a generic send/expect dialogue, a greeting to read, or for
// the default protocol nothing (over UDP, a byte whose refusal fails it).
func speak(conn net.Conn, t monitrc.Test, greeting string) bool {
	r := bufio.NewReader(conn)
	switch t.Protocol {
	case "http":
		req := t.Request
		if req == "" {
			req = "/"
		}
		host := t.Host
		if t.Port != 80 {
			host = net.JoinHostPort(t.Host, strconv.Itoa(t.Port))
		}
		if _, err := fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nAccept: */*\r\nConnection: close\r\n"+
			"User-Agent: monit/%s\r\n\r\n", req, host, Version); err != nil {
			return false
		}
		line, err := r.ReadString('\n')
		f := strings.Fields(line)
		if err != nil && line == "" || len(f) < 2 {
			return false
		}
		code, err := strconv.Atoi(f[1])
		return err == nil && code < 400
	case "generic":
		return sendExpect(conn, r, t)
	}
	if greeting != "" {
		line, err := r.ReadString('\n')
		return (err == nil || line != "") && strings.HasPrefix(line, greeting)
	}
	return true
}

// udpReady sends a byte and waits (until the test's deadline) for a
// refusal: silence, or an answer, is a pass.
func udpReady(conn net.Conn) error {
	if _, err := conn.Write([]byte{0}); err != nil {
		return err
	}
	_, err := conn.Read(make([]byte, 1))
	var ne net.Error
	if err == nil || (errors.As(err, &ne) && ne.Timeout()) {
		return nil
	}
	return err
}

// strerror is C's text for the errno under err ("Connection refused").
func strerror(err error) string {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return err.Error()
	}
	s := errno.Error()
	return strings.ToUpper(s[:1]) + s[1:]
}

// sendExpect runs a generic protocol's dialogue in order: a send is
// written, an expect (a regular expression) must match the next line read.
func sendExpect(conn net.Conn, r *bufio.Reader, t monitrc.Test) bool {
	for _, x := range t.Generic {
		if x.Send {
			if _, err := conn.Write([]byte(unescape(x.Text))); err != nil {
				return false
			}
			continue
		}
		re, err := regexp.Compile(x.Text)
		if err != nil {
			return false
		}
		line, err := r.ReadString('\n')
		if err != nil && line == "" || !re.MatchString(line) {
			return false
		}
	}
	return true
}

// unescape turns \r, \n and \t in a send string into their characters.
func unescape(s string) string {
	return strings.NewReplacer(`\r`, "\r", `\n`, "\n", `\t`, "\t").Replace(s)
}
