//go:build !linux

package redistest

import "os/exec"

// startProcess starts cmd. Only Linux can have the child killed when this
// process dies; elsewhere Close must be called (NewServer arranges it).
func startProcess(cmd *exec.Cmd) error { return cmd.Start() }

// waitStopped would wait until the process is stopped; without /proc the
// signal is trusted to take effect at once.
func waitStopped(pid int) error { return nil }
