// Command create-release writes the BOSH release tarball of a release
// directory, as "bosh create-release --tarball" does (see package
// boshrelease). release/scripts/create-release runs it on a staged copy of
// vigil's release directory.
//
//	create-release -dir DIR -name NAME -version V -commit HASH [-dirty] -tarball PATH
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/vigil-bosh/vigil/internal/boshrelease"
)

func main() {
	dir := flag.String("dir", ".", "the release directory")
	var m boshrelease.Meta
	flag.StringVar(&m.Name, "name", "", "the release's name")
	flag.StringVar(&m.Version, "version", "", "the release's version")
	flag.StringVar(&m.CommitHash, "commit", "", "the commit the release is made from (git rev-parse --short HEAD)")
	flag.BoolVar(&m.UncommittedChanges, "dirty", false, "the work tree had uncommitted changes")
	tarball := flag.String("tarball", "", "where to write the tarball")
	flag.Parse()
	if m.Name == "" || m.Version == "" || *tarball == "" {
		fmt.Fprintln(os.Stderr, "create-release: -name, -version and -tarball are required")
		os.Exit(2)
	}
	r, err := boshrelease.Read(*dir)
	if err == nil {
		_, err = boshrelease.Write(r, m, *tarball)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "create-release:", err)
		os.Exit(1)
	}
	for _, j := range r.Jobs {
		fmt.Printf("job %s %s\n", j.Name, j.Fingerprint)
	}
	for _, p := range r.Packages {
		fmt.Printf("package %s %s\n", p.Name, p.Fingerprint)
	}
	fmt.Println("tarball", *tarball)
}
