//go:build !unix

package redisserver

import "os"

// Without job-control signals, Close kills the server at once and Pause and
// Resume report an error.
var (
	sigTerm = os.Kill
	sigStop = os.Kill
	sigCont = os.Kill
)

// pauseSupported reports whether Pause and Resume work on this OS.
const pauseSupported = false
