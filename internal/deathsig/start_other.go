//go:build !linux

package deathsig

import (
	"os/exec"
	"syscall"
)

// Start starts cmd. Without a parent-death signal (only Linux has one), cmd
// keeps running if this process dies; sig is not used.
func Start(cmd *exec.Cmd, sig syscall.Signal) error { return cmd.Start() }

// Supported reports whether a child started by Start gets its signal when
// this process dies: false except on Linux.
const Supported = false
