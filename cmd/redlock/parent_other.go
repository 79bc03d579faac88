//go:build !unix

package main

// watchParent watches nothing on Windows, where a process learns of its
// parent's end only by opening it by a PID that may already name another
// process: hold keeps the lock after the script that started it ends, until
// it is stopped (Ctrl-C, Ctrl-Break, the console's close) or --for ends.
func watchParent(func(parentEnded)) (stop func()) { return func() {} }
