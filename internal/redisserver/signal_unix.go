//go:build unix

package redisserver

import "syscall"

// The signals used to stop, pause and resume a server.
var (
	sigTerm = syscall.SIGTERM
	sigStop = syscall.SIGSTOP
	sigCont = syscall.SIGCONT
)

// pauseSupported reports whether Pause and Resume work on this OS.
const pauseSupported = true
