//go:build linux

package redisserver

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// waitStopped waits until the kernel reports process pid as stopped, so that
// Pause returns only once the server has stopped answering.
func waitStopped(pid int) error {
	path := fmt.Sprintf("/proc/%d/stat", pid)
	deadline := time.Now().Add(time.Second)
	for {
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		// The state follows the command name, which is in parentheses and may
		// itself contain ") ".
		if i := bytes.LastIndexByte(data, ')'); i >= 0 && i+2 < len(data) {
			if s := data[i+2]; s == 'T' || s == 't' {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("process %d did not stop within 1s after SIGSTOP", pid)
		}
		time.Sleep(time.Millisecond)
	}
}

// unread sums the receive queues of the TCP connections whose local address
// is 127.0.0.1:port (::1:port if ipv6), from /proc/net/tcp (tcp6): the bytes
// that clients sent and the process has not read, including those on
// connections it has not accepted yet and on connections the client has
// closed since (CLOSE_WAIT).
func unread(ipv6 bool, port int) (int, error) {
	table, local := "/proc/net/tcp", fmt.Sprintf("0100007F:%04X", port) // 127.0.0.1 as a little-endian word, then the port
	if ipv6 {
		// ::1 as four 32-bit words, each little-endian.
		table, local = "/proc/net/tcp6", fmt.Sprintf("00000000000000000000000001000000:%04X", port)
	}
	data, err := os.ReadFile(table)
	if err != nil {
		return 0, err
	}
	total := 0
	for i, line := range bytes.Split(data, []byte("\n")) {
		// The table lists every socket of the machine (thousands on a busy
		// one): only the lines that name the port are split into fields.
		if !bytes.Contains(line, []byte(local)) {
			continue
		}
		f := strings.Fields(string(line))
		if i == 0 || len(f) < 5 || f[1] != local || (f[3] != "01" && f[3] != "08") { // ESTABLISHED, CLOSE_WAIT
			continue
		}
		_, rx, ok := strings.Cut(f[4], ":") // tx_queue:rx_queue, in hex
		if !ok {
			continue
		}
		n, err := strconv.ParseUint(rx, 16, 32)
		if err != nil {
			return 0, fmt.Errorf("parse %s: %q: %w", table, f[4], err)
		}
		if f[3] == "08" && n > 0 {
			n-- // the FIN takes a sequence number too
		}
		total += int(n)
	}
	return total, nil
}
