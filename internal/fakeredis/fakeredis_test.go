package fakeredis_test

import (
	"bufio"
	"fmt"
	"net"
	"testing"

	"github.com/go-redlock/redlock/internal/fakeredis"
)

// Serve reads each command's arguments, line ends inside them included, and
// writes the reply given for them, command after command on one connection.
func TestServe(t *testing.T) {
	addr := fakeredis.Serve(t, func(args []string) string {
		return fmt.Sprintf("+%q\r\n", args)
	})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	for _, tc := range []struct{ send, want string }{
		{"*2\r\n$7\r\nCLUSTER\r\n$5\r\nNODES\r\n", `+["CLUSTER" "NODES"]` + "\r\n"},
		{"*2\r\n$4\r\nEVAL\r\n$9\r\nreturn\r\n1\r\n", `+["EVAL" "return\r\n1"]` + "\r\n"},
		{"*1\r\n$4\r\nPING\r\n", `+["PING"]` + "\r\n"},
	} {
		if _, err := c.Write([]byte(tc.send)); err != nil {
			t.Fatal(err)
		}
		if got, err := r.ReadString('\n'); err != nil || got != tc.want {
			t.Fatalf("reply to %q = %q, %v; want %q", tc.send, got, err, tc.want)
		}
	}
}
