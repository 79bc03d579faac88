//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package main

import (
	"os"
	"syscall"
	"unsafe"
)

// fromTerminal reports whether sig is one that a terminal sends to its whole
// foreground process group (SIGINT for Ctrl-C, SIGQUIT for Ctrl-\) while the
// process group of CMD, whose process is pid, is that group: CMD then got its
// own copy from the terminal, and forwarding sig would deliver it twice (to a
// program that quits at once on a second Ctrl-C, say). A CMD that made a
// group of its own (timeout(1) does) is usually not in the foreground group,
// and then gets sig from run. The Go runtime does not say who sent a signal: sig sent by
// kill to run alone, while CMD is in the foreground group, is not passed on
// either.
func fromTerminal(sig os.Signal, pid int) bool {
	if sig != syscall.SIGINT && sig != syscall.SIGQUIT {
		return false
	}
	tty, err := os.Open("/dev/tty")
	if err != nil {
		return false // no controlling terminal
	}
	defer tty.Close()
	var pgrp int32
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, tty.Fd(), uintptr(syscall.TIOCGPGRP), uintptr(unsafe.Pointer(&pgrp))); errno != 0 {
		return false
	}
	cmdGroup, err := syscall.Getpgid(pid)
	return err == nil && int(pgrp) == cmdGroup
}
