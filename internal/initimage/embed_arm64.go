package initimage

import _ "embed"

//go:embed vigil-init.linux-arm64
var embedded string
