package job

import (
	"regexp"
	"strings"
	"testing"
)

func TestExtraKeys(t *testing.T) {
	src := `processes:
- name: a
  executable: /bin/a
  user: syslog:vcap
  limits: {cpu_weight: 50, cpu_quota: 150, cpuset: "0-1,4", cpuset_mems: "0-1"}
`
	j, warns, err := Parse(vcap, "web", "bpm.yml", []byte(src))
	if err != nil || len(warns) != 0 {
		t.Fatalf("err %v, warnings %v", err, warns)
	}
	p := j.Processes[0]
	if p.User != "syslog:vcap" || *p.Limits.CPUWeight != 50 || *p.Limits.CPUQuota != 150 || p.Limits.CPUSet != "0-1,4" ||
		p.Limits.CPUSetMems != "0-1" {
		t.Fatalf("got %+v", p)
	}
}

func TestExtraKeyErrors(t *testing.T) {
	src := `processes:
- name: a
  executable: /bin/a
  user: "syslog:"
  limits: {cpu_weight: 0, cpu_quota: 0, cpuset: "0-", cpuset_mems: "x"}
`
	_, _, err := Parse(vcap, "web", "bpm.yml", []byte(src))
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{`user must be NAME or NAME:GROUP, but got "syslog:"`,
		"cpu_weight must be between 1 and 10000, but got 0", "cpu_quota must be a positive percentage",
		`cpuset must be a list of CPUs and ranges such as "0-1,4", but got "0-"`,
		`cpuset_mems must be a list of memory nodes and ranges such as "0" or "0-1", but got "x"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

// TestValidCPUSet: the cpuset check takes exactly what the syntax
// ^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$ takes, over every string of up
// to five characters from the alphabet below.
func TestValidCPUSet(t *testing.T) {
	syntax := regexp.MustCompile(`^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$`)
	const alphabet = "01-, x"
	var all func(prefix string, n int)
	all = func(prefix string, n int) {
		if prefix != "" && validCPUSet(prefix) != syntax.MatchString(prefix) {
			t.Errorf("validCPUSet(%q) = %v", prefix, validCPUSet(prefix))
		}
		if n == 0 {
			return
		}
		for _, c := range alphabet {
			all(prefix+string(c), n-1)
		}
	}
	all("", 5)
}
