package monit

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-bosh/vigil/internal/supervise"
)

// TestBackoffAfterOOMSaysSo: a process waiting to restart after the OOM
// killer ended it is "Does not exist" with the reason in its message (the
// agent logs status_message); after another exit the message is monit's.
func TestBackoffAfterOOMSaysSo(t *testing.T) {
	now := time.Now()
	for _, c := range []struct {
		exit supervise.Exit
		want string
	}{
		{supervise.Exit{Signal: syscall.SIGKILL, OOM: true}, "process is not running: killed by the OOM killer"},
		{supervise.Exit{Code: 1}, "process is not running"},
	} {
		st := MapStatus(supervise.Status{State: supervise.Backoff, WantUp: true, LastExit: &c.exit}, now, nil)
		if st.Events != EventNonexist || st.Message != c.want {
			t.Errorf("exit %+v: events %#x message %q, want %#x %q", c.exit, st.Events, st.Message, EventNonexist, c.want)
		}
	}
	if !strings.Contains(supervise.Exit{Signal: syscall.SIGKILL, OOM: true}.String(), "OOM") {
		t.Error("an OOM exit's text does not say OOM")
	}
}
