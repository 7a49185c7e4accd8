module github.com/vigil-bosh/vigil

go 1.26.0

require (
	go.yaml.in/yaml/v3 v3.0.6
	golang.org/x/sys v0.50.0
)
