//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package main

import (
	"os"
	"syscall"
	"unsafe"
)

// fromTerminal reports whether sig is one that a terminal sends to its whole
// foreground process group (SIGINT for Ctrl-C, SIGQUIT for Ctrl-\) while
// run's own process group, which CMD shares, is that group: CMD then got its
// own copy from the terminal, and forwarding sig would deliver it twice (to a
// program that quits at once on a second Ctrl-C, say).
func fromTerminal(sig os.Signal) bool {
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
	return int(pgrp) == syscall.Getpgrp()
}
