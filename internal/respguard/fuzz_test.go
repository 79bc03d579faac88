package respguard

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
)

// gen makes RESP2/RESP3 replies from a fuzzer's bytes: every type a server
// may send (attributes before values, pushes, nulls, verbatim strings, blob
// errors, nested aggregates up to depth), each within the limits.
type gen struct {
	b []byte
}

func (g *gen) byte() byte {
	if len(g.b) == 0 {
		return 0
	}
	c := g.b[0]
	g.b = g.b[1:]
	return c
}

func (g *gen) text(n int) string {
	var sb strings.Builder
	for range n {
		sb.WriteByte(g.byte())
	}
	return sb.String()
}

// line is text for a simple string, an error or a number: no \r or \n.
func (g *gen) line() string {
	return strings.Map(func(r rune) rune {
		if r == '\r' || r == '\n' {
			return 'x'
		}
		return r
	}, g.text(int(g.byte()%16)))
}

func (g *gen) value(buf *bytes.Buffer, depth int) {
	c := g.byte()
	if depth >= MaxDepth {
		c %= 12 // scalars only
	}
	switch c % 19 {
	case 0:
		buf.WriteString("+" + g.line() + "\r\n")
	case 1:
		buf.WriteString("-" + g.line() + "\r\n")
	case 2:
		buf.WriteString(":" + strconv.Itoa(int(int8(g.byte()))) + "\r\n")
	case 3:
		buf.WriteString("$-1\r\n")
	case 4:
		buf.WriteString("_\r\n")
	case 5:
		buf.WriteString(",1.5e-3\r\n")
	case 6:
		buf.WriteString("#f\r\n")
	case 7:
		buf.WriteString("(-123456789012345678901234567890\r\n")
	case 8, 9: // a bulk string of any bytes
		s := g.text(int(g.byte()))
		fmt.Fprintf(buf, "$%d\r\n%s\r\n", len(s), s)
	case 10:
		s := "txt:" + g.text(int(g.byte()%32))
		fmt.Fprintf(buf, "=%d\r\n%s\r\n", len(s), s)
	case 11:
		s := g.text(int(g.byte() % 32))
		fmt.Fprintf(buf, "!%d\r\n%s\r\n", len(s), s)
	case 12:
		buf.WriteString("*-1\r\n")
	case 13: // an attribute, then the value it describes
		n := int(g.byte() % 3)
		fmt.Fprintf(buf, "|%d\r\n", n)
		for range 2 * n {
			g.value(buf, depth+1)
		}
		g.value(buf, depth)
	default: // array, set, push, map
		kind := "*~>%"[c%4]
		n := int(g.byte() % 5)
		fmt.Fprintf(buf, "%c%d\r\n", kind, n)
		if kind == '%' {
			n *= 2
		}
		for range n {
			g.value(buf, depth+1)
		}
	}
}

// chunkConn returns its data in reads of the sizes given, in turn.
type chunkConn struct {
	net.Conn
	data  []byte
	sizes []int
}

func (c *chunkConn) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := len(c.data)
	if len(c.sizes) > 0 {
		n = max(1, min(n, c.sizes[0]))
		c.sizes = c.sizes[1:]
	}
	n = copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

// FuzzGuard checks the guard against an encoder of valid replies: replies
// within the limits pass whole, whatever the reads' sizes and the client's
// buffer, and the scanner is at a reply's start after them; a header beyond
// the limits that follows them is refused, the replies before it passed on
// and nothing of it.
func FuzzGuard(f *testing.F) {
	f.Add([]byte("\x0e\x03\x08\x05hello\x0d\x01\x00\x01a\x02\x07"), []byte{1, 3, 7}, uint8(0), uint8(64))
	f.Add([]byte("\x0f\x04\x10\x02\x11\x01\x12\x00"), []byte{0}, uint8(3), uint8(1))
	f.Add([]byte{}, []byte{}, uint8(5), uint8(16))
	f.Fuzz(func(t *testing.T, seed, splits []byte, bad, bufSize uint8) {
		g := &gen{b: seed}
		var buf bytes.Buffer
		for len(g.b) > 0 && buf.Len() < 1<<16 {
			g.value(&buf, 0)
		}
		good := buf.Len()
		refusedHeader := []string{
			"*" + strconv.Itoa(MaxElements+1) + "\r\n",
			"%" + strconv.Itoa(MaxElements+1) + "\r\n", // pairs
			"$" + strconv.Itoa(MaxBulk+1) + "\r\n",
			"!" + strconv.Itoa(MaxBulk+1) + "\r\n",
			strings.Repeat(">1\r\n", MaxDepth+1),
			"+" + strings.Repeat("y", MaxLine+1) + "\r\n",
		}
		withBad := int(bad) % (len(refusedHeader) + 1)
		lineStart, lineEnd := good, good // of the refused line
		if withBad > 0 {
			h := refusedHeader[withBad-1]
			buf.WriteString(h)
			if strings.HasPrefix(h, ">") { // MaxDepth of them pass
				lineStart += 4 * MaxDepth
			}
			lineEnd = good + len(h)
		}
		sizes := make([]int, len(splits))
		for i, s := range splits {
			sizes[i] = int(s)
		}
		conn := Wrap(&chunkConn{data: buf.Bytes(), sizes: sizes})
		var got []byte
		p := make([]byte, max(1, int(bufSize)))
		var err error
		for {
			var n int
			n, err = conn.Read(p)
			got = append(got, p[:n]...)
			if err != nil {
				break
			}
		}
		if withBad == 0 {
			if err != io.EOF || !bytes.Equal(got, buf.Bytes()) {
				t.Fatalf("valid replies: read %d of %d bytes, error %v", len(got), buf.Len(), err)
			}
			s := conn.(*guarded).s
			if len(s.stack) != 0 || s.skip != 0 || len(s.line) != 0 {
				t.Fatalf("after valid replies, the scanner is not at a reply's start: stack %v, skip %d, line %q", s.stack, s.skip, s.line)
			}
			return
		}
		if !errors.Is(err, ErrRefused) {
			t.Fatalf("a header beyond the limits after %d bytes of valid replies: error %v, want ErrRefused", good, err)
		}
		// Every byte before the refused line, and never its whole: a
		// line split over reads may have had its head passed on, not its
		// end.
		if len(got) < lineStart || len(got) >= lineEnd {
			t.Fatalf("the client read %d bytes; the refused line is bytes %d to %d", len(got), lineStart, lineEnd)
		}
		if !bytes.Equal(got, buf.Bytes()[:len(got)]) {
			t.Fatal("the client read bytes that are not the stream's")
		}
	})
}
