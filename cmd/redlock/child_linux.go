package main

import "syscall"

// childSysProcAttr makes the kernel send the command SIGTERM if run dies
// (even by SIGKILL): nobody extends the lock any more, so the command must
// stop.
func childSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
