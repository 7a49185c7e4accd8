package web

import (
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/vigil-bosh/vigil/internal/testproc"
)

// TestRefusedConnectionsAreClosed: a request without credentials, or with
// wrong ones, gets its 401 and its connection closed with it, so that a
// flood of refused clients cannot hold the server's descriptors.
func TestRefusedConnectionsAreClosed(t *testing.T) {
	fb, l := newFake(t)
	_, ts := serve(t, fb, l)
	for _, auth := range []string{"", "Authorization: Basic cm9vdDp3cm9uZw==\r\n"} {
		c, err := net.Dial("tcp", strings.TrimPrefix(ts.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		if code := testproc.ClosedAfterReply(t, c, "GET / HTTP/1.1\r\nHost: x\r\n"+auth+"\r\n"); code != http.StatusUnauthorized {
			t.Errorf("status %d", code)
		}
	}
}
