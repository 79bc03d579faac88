//go:build linux

package deathsig_test

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-redlock/redlock/internal/deathsig"
)

// The child of a process that dies by SIGKILL gets the signal Start gave it,
// and not before: the helper process starts it from a goroutine that then
// ends.
func TestChildSignaledWhenParentDies(t *testing.T) {
	if !deathsig.Supported {
		t.Skip("no parent-death signal on " + runtime.GOOS)
	}
	if _, err := exec.LookPath("sleep"); err != nil {
		t.Skip("no sleep command")
	}
	parent := exec.Command(os.Args[0], "-test.run=^TestHelperParent$")
	parent.Env = append(os.Environ(), "DEATHSIG_HELPER=1")
	stdout, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	defer parent.Process.Kill()
	// The helper prints its child's pid once the goroutine that started it
	// has ended (or its test's failure).
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("helper: %v (said %q)", err, line)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("helper said %q", line)
	}
	time.Sleep(200 * time.Millisecond)
	if !alive(pid) {
		t.Fatalf("child %d died while its parent lived", pid)
	}
	parent.Process.Kill()
	parent.Wait()
	for deadline := time.Now().Add(5 * time.Second); alive(pid); {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("child %d still alive 5s after its parent was killed", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// alive reports whether process pid exists and is not a zombie.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}

// TestHelperParent is the parent process of TestChildSignaledWhenParentDies.
func TestHelperParent(t *testing.T) {
	if os.Getenv("DEATHSIG_HELPER") != "1" {
		t.Skip("helper process")
	}
	child := exec.Command("sleep", "60")
	done := make(chan error, 1)
	go func() { done <- deathsig.Start(child, syscall.SIGKILL) }()
	if err := <-done; err != nil {
		os.Stdout.WriteString(err.Error() + "\n")
		t.Fatal(err)
	}
	os.Stdout.WriteString(strconv.Itoa(child.Process.Pid) + "\n")
	time.Sleep(time.Minute) // until killed
}
