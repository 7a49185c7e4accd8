//go:build conformance

// Package boshagent drives the real BOSH agent (cloudfoundry/bosh-agent,
// built from its public source; never part of this repository) over its
// HTTPS message bus as the director and `bosh create-env` do, through a
// deploy of vigil's BOSH release and a stand-in job, on a runit stemcell's
// layout (private namespaces on this machine) and in the VM rig's guest
// with a Noble stemcell's settings. See README.md for how to run it.
//
// Only the standard library speaks to the agent: no agent code is used.
package boshagent

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Exchange is one request to the agent and its reply, as the wire had
// them, with when it was sent (since the run began) and how long it took.
type Exchange struct {
	At      time.Duration   `json:"at"`
	Took    time.Duration   `json:"took"`
	Method  string          `json:"method"`
	Request json.RawMessage `json:"request,omitempty"`
	Status  int             `json:"status"`
	Reply   json.RawMessage `json:"reply,omitempty"`
	Err     string          `json:"error,omitempty"`
}

// Client speaks the agent's HTTPS mbus: POST /agent with
// {"protocol","method","arguments","reply_to"} and basic auth from the
// URL, and PUT /blobs/ID. Asynchronous actions answer with a task id that
// is polled with get_task every TaskDelay until its value is final, as
// the director's and create-env's clients do.
type Client struct {
	URL       *url.URL // https://USER:PASS@HOST:PORT (no /agent)
	HTTP      *http.Client
	ReplyTo   string
	Protocol  int           // 3 is the director's; create-env sends none (0)
	TaskDelay time.Duration // between get_task polls; create-env's is 500 ms
	Began     time.Time     // the run's origin for Exchange.At

	mu   sync.Mutex
	wire []Exchange
}

// NewClient returns a client for mbus (the settings' URL with the
// agent's address) that trusts only ca, dialing through dial (nil: the
// default dialer).
func NewClient(mbus string, ca []byte, dial func(ctx context.Context, network, addr string) (net.Conn, error)) (*Client, error) {
	u, err := url.Parse(mbus)
	if err != nil {
		return nil, fmt.Errorf("mbus url: %w", err)
	}
	pool, err := certPool(ca)
	if err != nil {
		return nil, err
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, DialContext: dial,
		MaxIdleConnsPerHost: 2}
	return &Client{URL: u, HTTP: &http.Client{Transport: tr, Timeout: 10 * time.Minute},
		ReplyTo: "vigil-conformance", Protocol: 3, TaskDelay: 500 * time.Millisecond, Began: time.Now()}, nil
}

// Wire returns every exchange so far, in order.
func (c *Client) Wire() []Exchange {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Exchange(nil), c.wire...)
}

func (c *Client) record(e Exchange) {
	c.mu.Lock()
	c.wire = append(c.wire, e)
	c.mu.Unlock()
}

// reply is the agent's answer: a value or an exception.
type reply struct {
	Value     json.RawMessage `json:"value"`
	Exception *struct {
		Message string `json:"message"`
	} `json:"exception"`
}

// Call sends one message and returns its value; an exception is an
// error carrying the agent's message.
func (c *Client) Call(ctx context.Context, method string, args ...any) (json.RawMessage, error) {
	if args == nil {
		args = []any{}
	}
	msg := map[string]any{"method": method, "arguments": args, "reply_to": c.ReplyTo}
	if c.Protocol != 0 {
		msg["protocol"] = c.Protocol
	}
	body, err := json.Marshal(msg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	ex := Exchange{At: time.Since(c.Began), Method: method, Request: body}
	raw, status, err := c.do(ctx, http.MethodPost, "/agent", body)
	ex.Took, ex.Status, ex.Reply = time.Since(c.Began)-ex.At, status, raw
	if err == nil && status != http.StatusOK {
		err = fmt.Errorf("status %d: %s", status, bytes.TrimSpace(raw))
	}
	var r reply
	if err == nil {
		if err = json.Unmarshal(raw, &r); err == nil && r.Exception != nil {
			err = errors.New(r.Exception.Message)
		}
	}
	if err != nil {
		ex.Err = err.Error()
		err = fmt.Errorf("%s: %w", method, err)
	}
	c.record(ex)
	return r.Value, err
}

// Task sends an asynchronous action and polls get_task until its value
// is final (a value that is not {"agent_task_id":..,"state":"running"}).
func (c *Client) Task(ctx context.Context, method string, args ...any) (json.RawMessage, error) {
	v, err := c.Call(ctx, method, args...)
	if err != nil {
		return nil, err
	}
	id, running := taskState(v)
	if id == "" {
		return nil, fmt.Errorf("%s: no task id in %s", method, v)
	}
	tick := time.NewTicker(c.TaskDelay)
	defer tick.Stop()
	for running {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%s: task %s: %w", method, id, ctx.Err())
		case <-tick.C: // the client's poll interval, as the director's
		}
		if v, err = c.Call(ctx, "get_task", id); err != nil {
			return nil, fmt.Errorf("%s: task %s: %w", method, id, err)
		}
		_, running = taskState(v)
	}
	return v, nil
}

// taskState reads a task reply: its id, and whether it still runs.
func taskState(v json.RawMessage) (id string, running bool) {
	var t struct {
		ID    string `json:"agent_task_id"`
		State string `json:"state"`
	}
	if json.Unmarshal(v, &t) != nil || t.ID == "" {
		return "", false
	}
	return t.ID, t.State == "running"
}

// PutBlob uploads a blob as create-env does (PUT /blobs/ID), into the
// agent's own blob store, which its local blobstore reads first.
func (c *Client) PutBlob(ctx context.Context, id string, blob []byte) error {
	ex := Exchange{At: time.Since(c.Began), Method: "PUT /blobs/" + id,
		Request: json.RawMessage(fmt.Sprintf(`{"bytes":%d}`, len(blob)))}
	raw, status, err := c.do(ctx, http.MethodPut, "/blobs/"+id, blob)
	ex.Took, ex.Status = time.Since(c.Began)-ex.At, status
	if err == nil && status != http.StatusCreated {
		err = fmt.Errorf("status %d: %s", status, bytes.TrimSpace(raw))
	}
	if err != nil {
		ex.Err = err.Error()
		err = fmt.Errorf("upload blob %s: %w", id, err)
	}
	c.record(ex)
	return err
}

func (c *Client) do(ctx context.Context, method, path string, body []byte) ([]byte, int, error) {
	u := *c.URL
	u.User = nil
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	req, err := http.NewRequestWithContext(ctx, method, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, 0, err
	}
	if pw, ok := c.URL.User.Password(); ok {
		req.SetBasicAuth(c.URL.User.Username(), pw)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	return raw, resp.StatusCode, err
}
