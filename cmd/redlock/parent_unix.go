//go:build unix && !linux

package main

import "os"

// watchParent calls ended, once, from a goroutine of its own, when the
// process that started this one ends; stop ends the watch and waits for that
// goroutine. It asks for its parent's PID every parentPoll: the parent has
// ended once it is another (init, or a subreaper). A parent that ended
// before hold started is not seen; nor is anything when the parent is PID
// 1 or none.
func watchParent(ended func(parentEnded)) (stop func()) {
	if ppid := os.Getppid(); ppid > 1 {
		return pollWatch(ppid, ended)
	}
	return func() {}
}
