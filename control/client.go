package control

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"
)

// Client is a Manager that talks to a daemon over its control socket.
type Client struct {
	socket string
	http   *http.Client
}

var _ Manager = (*Client)(nil)

// NewClient returns a client for the socket at path. Nothing is dialled
// until the first call.
func NewClient(path string) *Client {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		},
		DisableCompression: true,
	}
	return &Client{socket: path, http: &http.Client{Transport: tr}}
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

// do sends one request; the caller closes the reply's body.
func (c *Client) do(ctx context.Context, method, path string, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, "http://vigil"+path, body)
	if err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("%w (no daemon answers on %s)", ErrNoDaemon, c.socket)
		}
		return nil, fmt.Errorf("control socket %s: %w", c.socket, err)
	}
	return resp, nil
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
