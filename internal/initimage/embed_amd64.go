package initimage

import _ "embed"

//go:embed vigil-init.linux-amd64
var embedded string
