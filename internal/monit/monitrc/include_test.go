package monitrc

import (
	"path/filepath"
	"testing"
)

// TestIncludesReadInPlace: monit reads an include where it stands, so the
// files it includes come between the services written before it and
// those after it (monit 5.2.5's `monit -t` blames the check after the
// include for a name the included file defined: it read that file
// first). On a fresh start with no saved state, a name clash keeps the
// definition monit read first, here the included job's, and refuses the
// control file whose check came after its include; before, vigil read a
// file's own services before its includes and kept the later one.
func TestIncludesReadInPlace(t *testing.T) {
	root := t.TempDir()
	rc := filepath.Join(root, "bosh", "etc", "monitrc")
	job := filepath.Join(root, "monit", "job", "0000_web.monitrc")
	write(t, rc, "set daemon 10\n"+proc("top")+"include /var/vcap/monit/job/*.monitrc\n"+proc("bottom"))
	write(t, job, proc("web"))
	c, _, err := Load(root)
	if err != nil || problems(c) != "" {
		t.Fatal(err, problems(c))
	}
	want(t, names(c), "top,web,bottom")

	write(t, rc, "set daemon 10\ninclude /var/vcap/monit/job/*.monitrc\n"+proc("WEB")+proc("bottom"))
	fresh, _, err := Load(root)
	if err != nil {
		t.Fatal(err)
	}
	want(t, names(fresh), "web")
	want(t, problems(fresh), rc+":3: service name conflict, WEB already defined at "+job+
		":1: none of this file's services is loaded")
}
