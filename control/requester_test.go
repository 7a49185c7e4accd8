package control

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
)

// askedManager records who each request says asked.
type askedManager struct {
	fakeManager
	who []string
}

func (m *askedManager) Status(ctx context.Context) (Status, error) {
	m.who = append(m.who, "status:"+Requester(ctx))
	return m.fakeManager.Status(ctx)
}

func (m *askedManager) Act(ctx context.Context, req ActionRequest) ([]ProcessStatus, error) {
	m.who = append(m.who, "act:"+Requester(ctx))
	return m.fakeManager.Act(ctx, req)
}

// TestRequestsNameTheirPeer: a request that changes something reaches the
// Manager naming who asked, by the socket's peer credentials: the uid and
// the pid of this test process, with its command; a status read names no
// one.
func TestRequestsNameTheirPeer(t *testing.T) {
	m := &askedManager{}
	_, c := serve(t, m)
	if _, err := c.Status(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Act(t.Context(), ActionRequest{Action: ActionStop, Job: "j"}); err != nil {
		t.Fatal(err)
	}
	comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", os.Getpid()))
	want := fmt.Sprintf("act:uid %d (%s, pid %d)", os.Getuid(), strings.TrimSpace(string(comm)), os.Getpid())
	if len(m.who) != 2 || m.who[0] != "status:" || m.who[1] != want {
		t.Fatalf("requesters %q, want status unnamed and %q", m.who, want)
	}
}
