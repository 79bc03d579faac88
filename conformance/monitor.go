package conformance

import (
	"bufio"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/go-redlock/redlock/redistest"
)

// monitor is a connection in MONITOR mode to a server without password or
// TLS: it sees every command the server runs, in the order it runs them,
// with where each came from (a client's address, or "lua" for a command a
// script ran).
type monitor struct {
	srv  *redistest.Server
	conn net.Conn
	r    *bufio.Reader
}

// monitored is one command a monitor saw.
type monitored struct {
	lua  bool     // run by a script (redis.call), not sent by a client
	args []string // the command's name, as the client wrote it, and arguments
}

// String writes the command as redis-cli would show it, each argument
// quoted, long ones cut, after "lua: " for a command a script ran.
func (m monitored) String() string {
	var b strings.Builder
	if m.lua {
		b.WriteString("lua: ")
	}
	for i, a := range m.args {
		if i > 0 {
			b.WriteByte(' ')
		}
		if len(a) > 60 {
			a = a[:60] + "..."
		}
		b.WriteString(strconv.Quote(a))
	}
	return b.String()
}

// commandList writes cmds as a list of commands.
func commandList(cmds []monitored) string {
	s := make([]string, len(cmds))
	for i, c := range cmds {
		s[i] = c.String()
	}
	return "[" + strings.Join(s, "; ") + "]"
}

// name returns the command's name in lower case, with its subcommand for
// the commands that have them ("client|setinfo", as INFO commandstats
// writes it).
func (m monitored) name() string {
	if len(m.args) == 0 {
		return ""
	}
	name := strings.ToLower(m.args[0])
	switch name {
	case "client", "script", "cluster", "command", "config", "function", "acl", "object", "memory":
		if len(m.args) > 1 {
			name += "|" + strings.ToLower(m.args[1])
		}
	}
	return name
}

// newMonitor starts a monitor on srv, closed when ctx's test ends.
func newMonitor(ctx context.Context, srv *redistest.Server) (*monitor, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", srv.Addr())
	if err != nil {
		return nil, err
	}
	m := &monitor{srv: srv, conn: conn, r: bufio.NewReader(conn)}
	m.deadline(ctx)
	if _, err := conn.Write([]byte("*1\r\n$7\r\nMONITOR\r\n")); err != nil {
		conn.Close()
		return nil, err
	}
	line, err := m.line()
	if err != nil || line != "+OK" {
		conn.Close()
		return nil, fmt.Errorf("MONITOR: %q, %v", line, err)
	}
	return m, nil
}

func (m *monitor) Close() error { return m.conn.Close() }

// deadline bounds the monitor's reads and writes by ctx's deadline.
func (m *monitor) deadline(ctx context.Context) {
	d, ok := ctx.Deadline()
	if !ok {
		d = time.Now().Add(subtestTimeout)
	}
	m.conn.SetDeadline(d)
}

func (m *monitor) line() (string, error) {
	line, err := m.r.ReadString('\n')
	return strings.TrimSuffix(line, "\r\n"), err
}

// sync returns the commands the server ran since the last sync (or the
// start): it sends a marker (ECHO) on a connection of its own and reads
// until the monitor sees it. A command whose reply a caller has received
// ran before the marker, so it is among them.
func (m *monitor) sync(ctx context.Context) ([]monitored, error) {
	m.deadline(ctx)
	marker := "conformance-monitor-" + rand.Text()
	if _, err := m.srv.Do(ctx, "ECHO", marker); err != nil {
		return nil, err
	}
	var cmds []monitored
	for {
		line, err := m.line()
		if err != nil {
			return nil, fmt.Errorf("reading MONITOR: %w", err)
		}
		c, err := parseMonitorLine(line)
		if err != nil {
			return nil, err
		}
		if !c.lua && len(c.args) == 2 && strings.EqualFold(c.args[0], "ECHO") && c.args[1] == marker {
			return cmds, nil
		}
		cmds = append(cmds, c)
	}
}

// parseMonitorLine parses a line of MONITOR's output:
//
//	+1700000000.123456 [0 127.0.0.1:5000] "SET" "k" "v" "NX" "PX" "300"
//	+1700000000.123470 [0 lua] "GET" "k"
//
// whose arguments are quoted as Redis's sdscatrepr quotes them.
func parseMonitorLine(line string) (monitored, error) {
	bad := func() (monitored, error) { return monitored{}, fmt.Errorf("unexpected MONITOR line %q", line) }
	_, rest, ok := strings.Cut(line, " [")
	if !ok {
		return bad()
	}
	source, rest, ok := strings.Cut(rest, "] ")
	if !ok {
		return bad()
	}
	_, from, _ := strings.Cut(source, " ")
	c := monitored{lua: from == "lua"}
	for rest != "" {
		if rest[0] != '"' {
			return bad()
		}
		var b strings.Builder
		i := 1
		for ; i < len(rest) && rest[i] != '"'; i++ {
			if rest[i] != '\\' || i+1 >= len(rest) {
				b.WriteByte(rest[i])
				continue
			}
			i++
			switch rest[i] {
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'a':
				b.WriteByte('\a')
			case 'b':
				b.WriteByte('\b')
			case 'x':
				if i+2 >= len(rest) {
					return bad()
				}
				v, err := strconv.ParseUint(rest[i+1:i+3], 16, 8)
				if err != nil {
					return bad()
				}
				b.WriteByte(byte(v))
				i += 2
			default: // \\ and \"
				b.WriteByte(rest[i])
			}
		}
		if i >= len(rest) {
			return bad()
		}
		c.args = append(c.args, b.String())
		rest = strings.TrimPrefix(rest[i+1:], " ")
	}
	if len(c.args) == 0 {
		return monitored{}, errors.New("MONITOR line without a command")
	}
	return c, nil
}
