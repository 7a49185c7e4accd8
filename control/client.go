package control

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"
	"time"
)

// Client is a Manager that talks to a daemon over its control socket.
type Client struct {
	socket string
}

var _ Manager = (*Client)(nil)

// NewClient returns a client for the socket at path. Nothing is dialled
// until the first call.
func NewClient(path string) *Client {
	return &Client{socket: path}
}

// Status implements Manager. It decodes the reply with DecodeStatus.
func (c *Client) Status(ctx context.Context) (Status, error) {
	var st Status
	data, err := c.fetch(ctx, http.MethodGet, "/v1/status", nil, &st)
	if err != nil {
		return st, err
	}
	if st, err = DecodeStatus(data); err != nil {
		return st, fmt.Errorf("decode reply: %w", err)
	}
	return st, nil
}

// Act implements Manager. It blocks as long as the daemon does.
func (c *Client) Act(ctx context.Context, req ActionRequest) ([]ProcessStatus, error) {
	r, err := c.Action(ctx, req)
	return r.Processes, err
}

// Action is Act with the whole reply: the statuses, and the number of the
// latest event the daemon had sent when the action settled.
func (c *Client) Action(ctx context.Context, req ActionRequest) (ActionReply, error) {
	var r ActionReply
	err := c.call(ctx, http.MethodPost, "/v1/action", req, &r)
	return r, err
}

// Signal implements Manager.
func (c *Client) Signal(ctx context.Context, req SignalRequest) error {
	return c.call(ctx, http.MethodPost, "/v1/signal", req, nil)
}

// Reload implements Manager.
func (c *Client) Reload(ctx context.Context) (ReloadResult, error) {
	var r ReloadResult
	err := c.call(ctx, http.MethodPost, "/v1/reload", nil, &r)
	return r, err
}

// PlanReload implements ReloadPlanner: what a reload would do.
func (c *Client) PlanReload(ctx context.Context) (ReloadResult, error) {
	var r ReloadResult
	err := c.call(ctx, http.MethodGet, "/v1/reload/plan", nil, &r)
	return r, err
}

// remoteError is an error the daemon answered with; Is maps its HTTP status
// back to the package's error values.
type remoteError struct {
	code int
	msg  string
}

func (e *remoteError) Error() string { return e.msg }

func (e *remoteError) Is(target error) bool {
	if target == ErrNotFound && e.code == http.StatusUnprocessableEntity {
		return true // ErrConfig is ErrNotFound too, as *Error says
	}
	for _, k := range errorCodes {
		if k.err == target {
			return e.code == k.code
		}
	}
	return false
}

// call sends in (unless nil) as JSON and decodes the reply into out
// (unless nil) with encoding/json.
func (c *Client) call(ctx context.Context, method, path string, in, out any) error {
	data, err := c.fetch(ctx, method, path, in, out)
	if err != nil || out == nil {
		return err
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("decode reply: %w", err)
	}
	return nil
}

// fetch sends in (unless nil) as JSON and returns the body of a 200
// reply. Any other reply is readError's error, and the body that came with
// it is decoded into out (unless nil).
func (c *Client) fetch(ctx context.Context, method, path string, in, out any) ([]byte, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, err
		}
		body = bytes.NewReader(b)
	}
	resp, err := c.do(ctx, method, path, body)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, readError(resp, out)
	}
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("read reply: %w", err)
	}
	return data, nil
}

// do sends one request on a connection of its own and returns the reply;
// the caller closes the reply's body, which closes the connection. The
// exchange runs on the caller's goroutine, with no transport or pool
// between (a command makes a call or two), and ctx's end breaks it off.
func (c *Client) do(ctx context.Context, method, path string, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, "http://vigil"+path, body)
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", c.socket)
	if err != nil {
		if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("%w (no daemon answers on %s)", ErrNoDaemon, c.socket)
		}
		return nil, fmt.Errorf("control socket %s: %w", c.socket, err)
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	resp, err := exchange(conn, req)
	if err != nil {
		stop()
		conn.Close()
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return nil, fmt.Errorf("control socket %s: %w", c.socket, err)
	}
	resp.Body = &replyBody{ReadCloser: resp.Body, ctx: ctx, conn: conn, stop: stop}
	return resp, nil
}

// exchange writes req on conn and reads the reply's head. A daemon may
// answer before it has read the whole request (one over its size limit)
// and close, failing the write: its answer is then still read.
func exchange(conn net.Conn, req *http.Request) (*http.Response, error) {
	werr := req.Write(conn)
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil && werr != nil {
		return nil, werr
	}
	return resp, err
}

// replyBody is a reply's body that fails with the call's context's error
// once it ends, and that closes its connection, and stops watching the
// context, when closed.
type replyBody struct {
	io.ReadCloser
	ctx  context.Context
	conn net.Conn
	stop func() bool
}

func (b *replyBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF && b.ctx.Err() != nil {
		err = b.ctx.Err()
	}
	return n, err
}

// Close closes the connection first: closing an HTTP body reads what is
// left of it, which an event stream never ends.
func (b *replyBody) Close() error {
	b.stop()
	err := b.conn.Close()
	_ = b.ReadCloser.Close()
	return err
}

// readError turns a reply other than 200 into a *remoteError, decoding the
// body that came with the error into out when both are there.
func readError(resp *http.Response, out any) error {
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("read reply: %w", err)
	}
	var er errorReply
	if json.Unmarshal(data, &er) != nil || er.Error == "" {
		er.Error = fmt.Sprintf("daemon answered %s", resp.Status)
	}
	if out != nil && len(er.Body) > 0 {
		_ = json.Unmarshal(er.Body, out)
	}
	return &remoteError{code: resp.StatusCode, msg: er.Error}
}
