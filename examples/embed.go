// Package examples holds the example BOSH jobs that `vigil demo` runs, as a
// BOSH director would render them: jobs/ and packages/ as they appear under
// /var/vcap. The web job's server is the program in examples/web.
package examples

import "embed"

// Tree is jobs/ and packages/.
//
//go:embed jobs packages
var Tree embed.FS
