//go:build !linux

package main

import "syscall"

// childSysProcAttr returns nil: without Linux's parent-death signal, a
// command whose run was killed keeps running, without its lock.
func childSysProcAttr() *syscall.SysProcAttr { return nil }
