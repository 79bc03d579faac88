//go:build !linux

package main

import "syscall"

// becomeSubreaper reports false: only Linux gives run the processes that
// CMD leaves behind, which then go on unseen after run releases the lock.
func becomeSubreaper() bool { return false }

// signalTree finds no descendants where /proc does not list them; run
// signals CMD alone.
func signalTree(syscall.Signal) int { return 0 }

// signalChildren is not used where becomeSubreaper reports false.
func signalChildren(syscall.Signal) {}

// reap is not used where becomeSubreaper reports false.
func reap(int, chan<- cmdExit, chan<- struct{}) {}
