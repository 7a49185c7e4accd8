package bpmcli_test

import (
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
)

// TestListShowsBPMProcessesOnly: a daemon that also runs monit checks of
// its own (a start program, not the bpm shim) does not make bpm list show
// them: bpm lists the processes of bpm.yml files only.
func TestListShowsBPMProcessesOnly(t *testing.T) {
	r := newRoot(t)
	webJob(r)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	root := r.layout.Root()
	r.write(filepath.Join(root, "bosh", "etc", "monitrc"), fmt.Sprintf("set daemon 10\nset httpd port %d and use address 127.0.0.1\n"+
		"  allow cleartext %s/monit/monit.user\ninclude %s/monit/job/*.monitrc\n", port, root, root), 0o600)
	r.write(filepath.Join(root, "monit", "monit.user"), "vcap:pw", 0o600)
	pid := filepath.Join(root, "sys", "run", "dns", "resolvconf.pid")
	r.write(filepath.Join(root, "jobs", "dns", "bin", "ctl"), "#!/bin/sh\ncase $1 in\n"+
		"start) mkdir -p "+filepath.Dir(pid)+"; sleep 100000 </dev/null >/dev/null 2>&1 & echo $! > "+pid+" ;;\n"+
		"stop) kill $(cat "+pid+") ;;\nesac\n", 0o755)
	r.write(filepath.Join(root, "monit", "job", "0001_web.monitrc"), "check process web\n  with pidfile "+r.layout.PidFile("web", "web")+"\n"+
		"  start program \"/var/vcap/jobs/bpm/bin/bpm start web\"\n  stop program \"/var/vcap/jobs/bpm/bin/bpm stop web\"\n  group vcap\n", 0o644)
	r.write(filepath.Join(root, "monit", "job", "0000_dns.monitrc"), "check process dns-resolvconf\n  with pidfile "+pid+"\n"+
		"  start program \""+root+"/jobs/dns/bin/ctl start\"\n  stop program \""+root+"/jobs/dns/bin/ctl stop\"\n  group vcap\n", 0o644)
	r.startDaemon()
	r.rep.Expect(t, "ready")
	out := r.must("list")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[1], "web ") {
		t.Fatalf("bpm list:\n%s", out)
	}
	if js := r.must("list", "--json"); strings.Contains(js, "dns") {
		t.Fatalf("bpm list --json:\n%s", js)
	}
}
