package job

import (
	"testing"
)

// notIsolated is the warning every process under isolation: host gets.
const notIsolated = "the process is not isolated: it runs in the host's mount, PID, IPC and UTS namespaces, " +
	"sees the host's whole file system and has no seccomp filter; only its user (vcap unless user says), " +
	"its capabilities, its rlimits and its cgroup limits apply"

func TestIsolationKey(t *testing.T) {
	rest := `  user: syslog
  capabilities: [NET_ADMIN]
  ephemeral_disk: true
  limits: {memory: 1G, cpuset: "1", cpuset_mems: "0"}
`
	j, warns, err := Parse(vcap, "web", "bpm.yml", []byte(proc("  isolation: host\n"+rest)))
	if err != nil {
		t.Fatal(err)
	}
	sameAts(t, "warnings", warningsOf(t, warns, "bpm.yml"), []at{{4, "processes[0].isolation", notIsolated}})
	p := j.Processes[0]
	if !p.Unisolated() || p.Isolation != IsolationHost || p.Limits.CPUSet != "1" || p.Limits.CPUSetMems != "0" {
		t.Fatalf("got %+v", p)
	}
	// sandbox is the default, said or not, and the same configuration.
	for _, src := range []string{proc(""), proc("  isolation: sandbox\n"), proc("  isolation: ~\n")} {
		j, warns, err := Parse(vcap, "web", "bpm.yml", []byte(src))
		if err != nil || len(warns) > 0 || j.Processes[0].Unisolated() || !j.Processes[0].Equal(mustParse(t, proc("")).Processes[0]) {
			t.Errorf("%q: %v %v %+v", src, err, warns, j)
		}
	}
	if p.Equal(mustParse(t, proc(rest)).Processes[0]) {
		t.Error("a process under isolation: host equals one in the sandbox")
	}
}

// TestIsolationBadInput: a value other than sandbox or host, and
// unsafe.privileged beside host, are errors; the keys that only shape the
// sandbox's mounts are warnings beside host, each at its own line.
func TestIsolationBadInput(t *testing.T) {
	_, _, err := Parse(vcap, "web", "bpm.yml", []byte(proc("  isolation: none\n")))
	sameAts(t, "bad value", errorsOf(t, err, "bpm.yml"), []at{{4, "processes[0].isolation",
		`isolation must be "sandbox" (bpm's, the default) or "host", but got "none"`}})

	_, _, err = Parse(vcap, "web", "bpm.yml", []byte(proc("  isolation: host\n  unsafe:\n    privileged: true\n")))
	sameAts(t, "privileged", errorsOf(t, err, "bpm.yml"), []at{{6, "processes[0].unsafe.privileged",
		"unsafe.privileged cannot be combined with isolation: host (line 4): privileged is bpm's sandbox with every " +
			"capability; in the host's namespaces, name the user (user: root) and the capabilities the process needs"}})

	_, warns, err := Parse(vcap, "web", "bpm.yml", []byte(proc(`  isolation: host
  additional_volumes:
  - path: /var/vcap/data/web/cache
    writable: true
  unsafe:
    host_pid_namespace: true
    unrestricted_volumes:
    - path: /etc/ssl
`)))
	if err != nil {
		t.Fatal(err)
	}
	sameAts(t, "warnings", warningsOf(t, warns, "bpm.yml"), []at{
		{4, "processes[0].isolation", notIsolated},
		{6, "processes[0].additional_volumes", "are not mounted under isolation: host (line 4): each path is still created " +
			"and given to the process's user (unless mount_only), but writable, allow_executions and shared do not apply: " +
			"the process reaches the paths as the host has them"},
		{9, "processes[0].unsafe.host_pid_namespace", "has no effect under isolation: host (line 4): the process is in the host's PID namespace already"},
		{11, "processes[0].unsafe.unrestricted_volumes", "has no effect under isolation: host (line 4): nothing is mounted, the process sees the host's whole file system"},
	})
}
