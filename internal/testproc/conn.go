package testproc

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// closeGuard bounds how long ClosedAfterReply waits for the server to
// close: well below the idle timeouts (15 s and more) a server that keeps
// the connection would wait for.
const closeGuard = 10 * time.Second

// ClosedAfterReply writes the raw HTTP request req on c, reads the reply,
// and fails t unless the server then closes the connection at once,
// instead of keeping it for its idle timeout (or for good). It returns the
// reply's status and closes c.
func ClosedAfterReply(t testing.TB, c net.Conn, req string) int {
	t.Helper()
	defer c.Close()
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(closeGuard))
	br := bufio.NewReader(c)
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no reply: %v", err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	_, err = br.ReadByte()
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		t.Errorf("after a %d reply the server kept the connection for %s", res.StatusCode, closeGuard)
	case err == nil:
		t.Errorf("after a %d reply the server sent more", res.StatusCode)
	}
	return res.StatusCode
}
