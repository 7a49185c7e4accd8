// Package stemcell holds the two systemd units that put vigil where monit
// runs on a systemd stemcell (docs/COMPATIBILITY.md, "The stemcell's
// service"): vigil.service, the daemon that holds every job, and
// monit.service, the one process the BOSH agent kills and starts to
// reload monit. They are the one copy of those units: `vigil install
// --unit-dir` writes them from here (Render), and the BOSH release's
// packaging copies the files beside this one into its package, for the
// vigil job's pre-start.
package stemcell

import (
	_ "embed"
	"fmt"
	"path/filepath"
	"strings"
)

// Binary and Root are the paths the units name: the vigil release's
// package and the BOSH root.
const (
	Binary = "/var/vcap/packages/vigil/bin/vigil"
	Root   = "/var/vcap"
)

var (
	//go:embed vigil.service
	vigilUnit string
	//go:embed monit.service
	monitUnit string
)

// Unit is a unit file: its name and its text.
type Unit struct {
	Name, Text string
}

// Units returns the units as shipped, naming Binary and Root: vigil.service
// first.
func Units() []Unit {
	return []Unit{{"vigil.service", vigilUnit}, {"monit.service", monitUnit}}
}

// Render returns the units naming binary (an absolute path) and the BOSH
// root root instead. A path that systemd would split or expand (blanks,
// quotes, backslashes, '%' specifiers) is refused: the unit would run
// something else.
func Render(binary, root string) ([]Unit, error) {
	for _, p := range []string{binary, root} {
		if !filepath.IsAbs(p) || strings.ContainsAny(p, " \t\n\"'\\%$;") {
			return nil, fmt.Errorf("stemcell units: %q cannot be named in a unit (an absolute path without blanks, quotes, backslashes, %% or $)", p)
		}
	}
	root = filepath.Clean(root)
	r := strings.NewReplacer(Binary, binary, "--root "+Root, "--root "+root, "PATH="+Root+"/", "PATH="+root+"/")
	out := Units()
	for i := range out {
		lines := strings.SplitAfter(out[i].Text, "\n")
		for j, l := range lines {
			if !strings.HasPrefix(l, "#") {
				lines[j] = r.Replace(l)
			}
		}
		out[i].Text = strings.Join(lines, "")
	}
	return out, nil
}
