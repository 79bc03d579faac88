package main

import (
	"fmt"
	"os"
	"sync"
	"time"
)

// parentEnded is what ends hold, as a stop signal does, when the process
// that started it has ended (see watchParent): the script that ran hold in
// the background died without stopping it, which would otherwise leave the
// lock extended for ever. It is an os.Signal only to travel where the
// signals go: withLock's wait and hold's wait for its end.
type parentEnded struct{ pid int }

func (p parentEnded) String() string {
	return fmt.Sprintf("the process that started it (PID %d) ended", p.pid)
}

// Signal makes parentEnded an os.Signal.
func (parentEnded) Signal() {}

// parentPoll is how often pollParent asks for the parent's PID.
var parentPoll = time.Second

// pollParent calls ended once, and returns, when this process's parent is
// no longer ppid (it ended: the process was given to init or to a
// subreaper), asking every parentPoll; it returns at once when quit is
// closed.
func pollParent(ppid int, quit <-chan struct{}, ended func(parentEnded)) {
	t := time.NewTicker(parentPoll)
	defer t.Stop()
	for {
		if os.Getppid() != ppid {
			ended(parentEnded{ppid})
			return
		}
		select {
		case <-quit:
			return
		case <-t.C:
		}
	}
}

// pollWatch runs pollParent on a goroutine of its own; stop ends it and
// waits for it.
func pollWatch(ppid int, ended func(parentEnded)) (stop func()) {
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { pollParent(ppid, quit, ended) })
	return func() { close(quit); wg.Wait() }
}
