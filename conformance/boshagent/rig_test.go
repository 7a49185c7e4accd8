//go:build conformance

package boshagent

import (
	_ "embed"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var (
	agentFlag = flag.String("agent", "", "the bosh-agent binary, built from cloudfoundry/bosh-agent (README)")
	monitFlag = flag.String("monit", "", "the stemcell's monit 5.2.5: the agent repository's integration/assets/monit")
	outFlag   = flag.String("out", "", "a directory to keep each run's records in (run.md, run.json, logs)")
)

// variant is one deploy: vigil as the supervisor (the release's default),
// or the stemcell's monit 5.2.5 with vigil as bpm only (vigil.supervisor
// false), from the same manifest otherwise.
type variant struct {
	name  string
	props map[string]any
}

var variants = []variant{
	{"vigil", map[string]any{}},
	{"monit-5.2.5", map[string]any{"vigil": map[string]any{"supervisor": false}}},
}

//go:embed stemcell-bosh.sh
var stemcellBosh []byte

// layRig fills a rig's directory as its script expects (stemcell-bosh.sh
// says what): the agent and monit 5.2.5, agent.json and the settings with
// a new mbus certificate, which it returns, the common layout script, and
// script, the rig's own, as init.sh; out/ for the records.
func layRig(t *testing.T, dir, agent, monit string, stem Stemcell, script []byte) MbusCert {
	t.Helper()
	copyFile(t, agent, filepath.Join(dir, "bin", "bosh-agent"), 0o755)
	copyFile(t, monit, filepath.Join(dir, "bin", "monit"), 0o755)
	cert, err := NewMbusCert(stem.IP)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "etc", "agent.json"), stem.AgentJSON(), 0o644)
	writeFile(t, filepath.Join(dir, "etc", "settings.json"), stem.Settings(cert), 0o600)
	writeFile(t, filepath.Join(dir, "stemcell-bosh.sh"), stemcellBosh, 0o644)
	writeFile(t, filepath.Join(dir, "init.sh"), script, 0o755)
	if err := os.MkdirAll(filepath.Join(dir, "out"), 0o755); err != nil {
		t.Fatal(err)
	}
	return cert
}

// needBinaries fails unless -agent and -monit name files.
func needBinaries(t *testing.T) (agent, monit string) {
	t.Helper()
	if *agentFlag == "" || *monitFlag == "" {
		t.Fatal("needs -agent PATH (a built bosh-agent) and -monit PATH (its repository's integration/assets/monit): README.md")
	}
	for _, p := range []string{*agentFlag, *monitFlag} {
		if _, err := os.Stat(p); err != nil {
			t.Fatal(err)
		}
	}
	if os.Geteuid() != 0 {
		t.Fatal("the rigs need root")
	}
	return *agentFlag, *monitFlag
}

// keep copies a run's directory into -out/name, when -out is given.
func keep(t *testing.T, dir, name string) {
	if *outFlag == "" {
		return
	}
	dest := filepath.Join(*outFlag, name)
	os.RemoveAll(dest)
	os.MkdirAll(filepath.Dir(dest), 0o755)
	if out, err := exec.Command("cp", "-a", dir, dest).CombinedOutput(); err != nil {
		t.Errorf("keep %s: %v %s", dest, err, out)
		return
	}
	t.Logf("records kept in %s", dest)
}

// buildDir holds what the tests build once (vigil), removed at the end.
var buildDir string

func TestMain(m *testing.M) {
	flag.Parse()
	var err error
	if buildDir, err = os.MkdirTemp("", "boshagent-build"); err != nil {
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(buildDir)
	os.Exit(code)
}

var vigilBuild struct {
	sync.Once
	path string
	err  error
	out  []byte
}

// vigilBinary builds vigil from this repository once, as the release's
// packaging builds it (static, trimmed, with a version).
func vigilBinary(t *testing.T) string {
	t.Helper()
	vigilBuild.Do(func() {
		vigilBuild.path = filepath.Join(buildDir, "vigil")
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-X main.version=0-conformance",
			"-o", vigilBuild.path, "./cmd/vigil")
		cmd.Dir = repoRoot(t)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		vigilBuild.out, vigilBuild.err = cmd.CombinedOutput()
	})
	if vigilBuild.err != nil {
		t.Fatalf("build vigil: %v\n%s", vigilBuild.err, vigilBuild.out)
	}
	return vigilBuild.path
}

func repoRoot(t *testing.T) string {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

func copyFile(t *testing.T, src, dst string, mode os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, mode); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path string, b []byte, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, mode); err != nil {
		t.Fatal(err)
	}
}

// checkFirewall reads what a run left about the stand-in's grant (facts)
// and says it: the rule the agent gave (per cgroup, or the vcap uid
// fallback), whether the job reached the monit API, whether a vcap
// neighbour did. Where the job's process lived in bpm's scope
// (runc-bpm-JOB.scope) the agent must have given the per-cgroup rule, the
// job must have reached the API and the neighbour must not have.
func checkFirewall(t *testing.T, facts string) {
	t.Helper()
	inScope := strings.Contains(facts, "cgroup 0::/system.slice/runc-bpm-standin.scope")
	perCgroup := strings.Contains(facts, "Using cgroup rule for") && !strings.Contains(facts, "Falling back to UID rule")
	reached := strings.Contains(facts, "monit API: reachable") && !strings.Contains(facts, "monit API: dropped")
	neighbour := "not tried"
	for _, w := range []string{"reachable", "dropped", "refused"} {
		if strings.Contains(facts, "a vcap neighbour: "+w) {
			neighbour = w
		}
	}
	rule := "the vcap uid fallback"
	if perCgroup {
		rule = "a per-cgroup rule"
	}
	t.Logf("firewall: the job's process in bpm's scope: %v; the agent gave %s; the job reached the monit API: %v; a vcap neighbour: %s",
		inScope, rule, reached, neighbour)
	if inScope && (!perCgroup || !reached || neighbour != "dropped") {
		t.Errorf("in bpm's scope the job must get the per-cgroup rule, reach the API, and its neighbour must not")
	}
}
