//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package main

import "os"

// fromTerminal reports false: run forwards every signal it catches.
func fromTerminal(os.Signal, int) bool { return false }
