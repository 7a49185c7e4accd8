package systemd

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vigil-bosh/vigil/internal/testproc"
)

// fakeEnv, set in the environment, makes the test binary act as systemctl
// over the state directory it names: each call is appended to DIR/calls,
// each unit's state is DIR/state/UNIT ("ACTIVE SUB NRESTARTS"), and a start
// of a unit listed in DIR/fail fails it.
const fakeEnv = "VIGIL_FAKE_SYSTEMCTL"

func TestMain(m *testing.M) {
	testproc.Main() // the test binary also serves as vigil's per-process init
	if dir := os.Getenv(fakeEnv); dir != "" {
		os.Exit(fakeSystemctl(dir, os.Args[1:]))
	}
	os.Exit(m.Run())
}

func fakeSystemctl(dir string, args []string) int {
	f, err := os.OpenFile(filepath.Join(dir, "calls"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Fprintln(f, strings.Join(args, " "))
	f.Close()
	if len(args) == 0 {
		return 1
	}
	var units []string
	for _, a := range args[1:] {
		if !strings.HasPrefix(a, "-") {
			units = append(units, a)
		}
	}
	fails, _ := os.ReadFile(filepath.Join(dir, "fail"))
	code := 0
	for _, u := range units {
		st := fakeState(dir, u)
		switch args[0] {
		case "start", "restart":
			if strings.Contains(string(fails), u) {
				st[0], st[1] = "failed", "failed"
				fmt.Fprintf(os.Stderr, "Job for %s failed because the control process exited with error code.\n", u)
				code = 1
			} else if args[0] == "restart" || st[0] != "active" {
				st[0], st[1] = "active", "running"
			}
		case "stop":
			st[0], st[1] = "inactive", "dead"
		case "show":
			fmt.Printf("Id=%s\nActiveState=%s\nSubState=%s\nMainPID=%d\nNRestarts=%s\nExecMainCode=%d\nExecMainStatus=%d\nStateChangeTimestamp=Mon 2026-11-30 01:00:00 UTC\n\n",
				u, st[0], st[1], map[bool]int{true: 4242}[st[0] == "active"], st[2],
				map[bool]int{true: cldKilled}[st[0] == "failed"], map[bool]int{true: 3}[st[0] == "failed"])
		}
		if err := os.WriteFile(filepath.Join(dir, "state", u), []byte(strings.Join(st, " ")), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return code
}

func fakeState(dir, unit string) []string {
	b, err := os.ReadFile(filepath.Join(dir, "state", unit))
	if f := strings.Fields(string(b)); err == nil && len(f) == 3 {
		return f
	}
	return []string{"inactive", "dead", "0"}
}
