//go:build linux

package deathsig

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

type request struct {
	cmd  *exec.Cmd
	errc chan error
}

var (
	once     sync.Once
	requests chan request
)

// spawner starts the children, on a thread that never exits.
func spawner() {
	runtime.LockOSThread() // never unlocked: the thread lives as long as the process
	for r := range requests {
		r.errc <- r.cmd.Start()
	}
}

// Start starts cmd so that the kernel sends it sig when this process dies.
// It sets cmd.SysProcAttr's Pdeathsig, making a SysProcAttr if cmd has none.
func Start(cmd *exec.Cmd, sig syscall.Signal) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = sig
	once.Do(func() {
		requests = make(chan request)
		go spawner()
	})
	errc := make(chan error, 1)
	requests <- request{cmd: cmd, errc: errc}
	return <-errc
}

// Supported reports whether a child started by Start gets its signal when
// this process dies: true on Linux.
const Supported = true
