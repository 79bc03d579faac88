package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// openPTY returns the two ends of a new pseudo-terminal, or skips the test
// where the system has none.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { master.Close() })
	var unlock int32
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, master.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); errno != 0 {
		t.Skipf("unlockpt: %v", errno)
	}
	var n uint32
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, master.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); errno != 0 {
		t.Skipf("ptsname: %v", errno)
	}
	slave, err = os.OpenFile("/dev/pts/"+itoa(int(n)), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("open the pseudo-terminal's slave: %v", err)
	}
	t.Cleanup(func() { slave.Close() })
	return master, slave
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

// Ctrl-C on the terminal where run is the foreground job reaches CMD once:
// the terminal sends SIGINT to run's process group, CMD's too, and run does
// not forward its own copy. A program that quits at once on a second Ctrl-C
// (terraform, docker compose) would otherwise never shut down gracefully. A
// CMD that made a process group of its own (as timeout(1) does) gets no copy
// from the terminal, and gets run's.
func TestRunCtrlCReachesCommandOnce(t *testing.T) {
	t.Parallel()
	_, addrs := nodes(t, 3)
	for _, helper := range []string{"count-sigint", "count-sigint-own-group"} {
		t.Run(helper, func(t *testing.T) { ctrlCOnce(t, addrs, helper) })
	}
}

// ctrlCOnce runs the test binary as the helper CMD under run, as the
// foreground job of a new terminal, types Ctrl-C and counts the SIGINTs CMD
// got.
func ctrlCOnce(t *testing.T, addrs, helper string) {
	master, slave := openPTY(t)
	log := filepath.Join(t.TempDir(), "signals")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := command(ctx, "run", "--nodes", addrs, "--key", "ctrlc-"+helper, "--", self)
	cmd.Env = append(cmd.Env, "LOG="+log, helperEnv+"="+helper)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	// A session of its own, with the terminal as its controlling terminal:
	// run's process group is the terminal's foreground group, as a job
	// started at a shell prompt is.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { // drain what run and CMD write on the terminal
		buf := make([]byte, 4096)
		for {
			if _, err := master.Read(buf); err != nil {
				return
			}
		}
	}()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if b, _ := os.ReadFile(log); strings.Contains(string(b), "ready") {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("CMD did not start within 30s")
		}
	}
	if _, err := master.Write([]byte{0x03}); err != nil { // Ctrl-C
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("run: %v", err)
	}
	b, _ := os.ReadFile(log)
	if n := strings.Count(string(b), "INT"); n != 1 {
		t.Errorf("one Ctrl-C: CMD got SIGINT %d times, want once; its log:\n%s", n, b)
	}
}
