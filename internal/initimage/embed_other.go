//go:build !amd64 && !arm64

package initimage

// embedded is empty where vigil carries no image: vigil runs itself as the
// init.
var embedded string
