package health

import (
	"bytes"
	"fmt"
	"net"
	"strings"
)

// Notice is one message from a process over systemd's notification socket.
type Notice struct {
	Ready    bool   // READY=1
	Stopping bool   // STOPPING=1
	Watchdog bool   // WATCHDOG=1: a keep-alive
	Status   string // STATUS=..., "" when absent
}

// ParseNotice reads one sd_notify datagram: newline-separated KEY=VALUE
// assignments. Unknown keys are ignored, as systemd does.
func ParseNotice(b []byte) Notice {
	var n Notice
	for _, line := range bytes.Split(b, []byte{'\n'}) {
		k, v, ok := strings.Cut(string(line), "=")
		if !ok {
			continue
		}
		switch k {
		case "READY":
			n.Ready = v == "1"
		case "STOPPING":
			n.Stopping = v == "1"
		case "WATCHDOG":
			n.Watchdog = v == "1"
		case "STATUS":
			n.Status = v
		}
	}
	return n
}

// NotifySocket is a listening systemd notification socket: the process finds
// its path in NOTIFY_SOCKET and sends datagrams to it.
type NotifySocket struct {
	Path string
	conn *net.UnixConn
}

// ListenNotify creates the datagram socket at path.
func ListenNotify(path string) (*NotifySocket, error) {
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return nil, fmt.Errorf("notify socket: %w", err)
	}
	return &NotifySocket{Path: path, conn: c}, nil
}

// Receive blocks for the next notice; it fails once the socket is closed.
func (s *NotifySocket) Receive() (Notice, error) {
	buf := make([]byte, 4096)
	n, _, err := s.conn.ReadFromUnix(buf)
	if err != nil {
		return Notice{}, fmt.Errorf("notify socket: %w", err)
	}
	return ParseNotice(buf[:n]), nil
}

// Close closes and removes the socket.
func (s *NotifySocket) Close() error {
	if s == nil {
		return nil
	}
	return s.conn.Close()
}
