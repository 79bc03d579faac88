package main

import (
	"errors"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// watchParent calls ended, once, from a goroutine of its own, when the
// process that started this one ends; stop ends the watch and waits for that
// goroutine. It watches the parent through a pidfd (Linux 5.3 and later),
// which becomes readable when the parent exits, and checks after opening it
// that the parent is still the process it opened, since one that ended
// first has left this process to init or a subreaper and its PID free for
// another process; without pidfds (an older kernel, a sandbox that forbids
// pidfd_open), it asks for its parent's PID every parentPoll instead. A
// parent that ended before hold started is not seen (hold's parent is then
// init, or a subreaper, already); nor is anything when the parent is PID 1
// or none (PID 0: hold is a container's first process), which do not end
// before the system or the container.
func watchParent(ended func(parentEnded)) (stop func()) {
	ppid := os.Getppid()
	if ppid <= 1 {
		return func() {}
	}
	fd, err := unix.PidfdOpen(ppid, 0)
	if err != nil {
		return pollWatch(ppid, ended)
	}
	// Closed by stop: makes r readable, which ends the poll below.
	r, w, err := os.Pipe()
	if err != nil {
		unix.Close(fd)
		return pollWatch(ppid, ended)
	}
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		defer unix.Close(fd)
		if os.Getppid() != ppid { // ended before the pidfd was open
			ended(parentEnded{ppid})
			return
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}, {Fd: int32(r.Fd()), Events: unix.POLLIN}}
		for {
			_, err := unix.Poll(fds, -1)
			switch {
			case errors.Is(err, unix.EINTR):
				continue
			case err != nil:
				pollParent(ppid, quit, ended)
			case fds[1].Revents != 0: // stop
			case fds[0].Revents != 0:
				ended(parentEnded{ppid})
			default:
				continue
			}
			return
		}
	})
	return func() {
		close(quit)
		w.Close()
		wg.Wait()
		r.Close()
	}
}
