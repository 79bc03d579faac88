package redlock

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// String describes the client by its nodes' names (addresses with passwords
// removed), quorum and TTL, as in
// "redlock.Client{nodes: [10.0.0.1:6379 redis://:xxxxx@10.0.0.2:6379 10.0.0.3:6379], quorum: 2, ttl: 10s}".
func (c *Client) String() string {
	if c.unmade() {
		return "redlock.Client(nil)"
	}
	return fmt.Sprintf("redlock.Client{nodes: [%s], quorum: %d, ttl: %v}", strings.Join(c.names, " "), c.quorum, c.ttl)
}

// Format writes String whatever the verb (%v, %+v, %#v, %s, %d, ...), so
// that printing a Client never shows its fields, such as its nodes.
func (c *Client) Format(f fmt.State, verb rune) { io.WriteString(f, c.String()) }

// String describes the lock by its key (without the Client's prefix), its
// fencing token when it has one, and Until, as in
// `redlock.Lock{key: "invoice:42", token: 7, until: 15:04:05.000}`. It never
// shows the lock's random value, which would let whoever sees it release the
// lock.
func (l *Lock) String() string {
	if l.unmade() {
		return "redlock.Lock(nil)"
	}
	var b strings.Builder
	b.WriteString("redlock.Lock{key: ")
	b.WriteString(strconv.Quote(l.name))
	if l.token != 0 {
		b.WriteString(", token: ")
		b.WriteString(strconv.FormatUint(l.token, 10))
	}
	b.WriteString(", until: ")
	b.WriteString(l.Until().Format(time.TimeOnly + ".000"))
	b.WriteString("}")
	return b.String()
}

// Format writes String whatever the verb (%v, %+v, %#v, %s, %d, ...), so
// that printing a *Lock never shows its value. A copy of the struct (*l,
// which go vet reports as a copy of a lock value) has no Format method and
// is printed field by field, its value included: print the pointer.
func (l *Lock) Format(f fmt.State, verb rune) { io.WriteString(f, l.String()) }
