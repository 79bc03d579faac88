package respguard

import (
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
)

// valid are replies that the drivers receive, or that RESP allows, each of
// which must pass whole and split anywhere.
var valid = []string{
	"+OK\r\n", "-ERR boom\r\n", ":1\r\n", "$-1\r\n", "*-1\r\n", "_\r\n", ",1.5\r\n", "#t\r\n", "(12345678901234567890\r\n",
	"$0\r\n\r\n", "$5\r\nhello\r\n", "$4\r\na\r\nb\r\n", "!3\r\nERR\r\n", "=7\r\ntxt:abc\r\n",
	"*0\r\n", "*2\r\n:1\r\n$2\r\n17\r\n",
	// HELLO (RESP3).
	"%3\r\n$6\r\nserver\r\n$5\r\nredis\r\n$5\r\nproto\r\n:3\r\n$7\r\nmodules\r\n*0\r\n",
	// CLUSTER SLOTS.
	"*2\r\n*3\r\n:0\r\n:5460\r\n*3\r\n$9\r\n127.0.0.1\r\n:7000\r\n$3\r\nabc\r\n*4\r\n:5461\r\n:16383\r\n*3\r\n$9\r\n127.0.0.1\r\n:7001\r\n$3\r\ndef\r\n*3\r\n$9\r\n127.0.0.1\r\n:7002\r\n$3\r\nghi\r\n",
	// A pub/sub push, and a sharded message.
	">3\r\n$10\r\nssubscribe\r\n$2\r\nch\r\n:1\r\n", "*3\r\n$8\r\nsmessage\r\n$2\r\nch\r\n$0\r\n\r\n",
	// An attribute before a reply, empty aggregates.
	"|1\r\n+key-popularity\r\n%0\r\n*2\r\n:1\r\n:2\r\n", "~0\r\n", "%0\r\n", "|0\r\n+OK\r\n",
	// As deep as allowed.
	strings.Repeat("*1\r\n", MaxDepth) + ":1\r\n",
}

// refused are replies beyond the limits, or no RESP.
var refused = map[string]string{
	"*4000000000\r\n":                       "elements",
	"%4000000000\r\n":                       "elements",
	"$4000000000\r\n":                       "bytes",
	"!99999999999\r\n":                      "bytes",
	strings.Repeat("*1\r\n", MaxDepth+1):    "nested",
	strings.Repeat("*1\r\n", 10_000_000):    "nested",
	"*2\r\n" + strings.Repeat("*1\r\n", 40): "nested",
	"+" + strings.Repeat("x", MaxLine+1):    "line",
	"$-2\r\n":                               "length",
	"*x\r\n":                                "elements",
	"%-1\r\n":                               "elements",
	"?\r\n":                                 "unknown type",
	"+OK\n":                                 "\\r\\n",
	"$?\r\n":                                "length", // RESP3's streamed strings: Redis sends none
	"+OK\r\n" + strings.Repeat("*1\r\n", 1000): "nested",
	"$99999999999999999999999\r\n":             "bytes", // beyond int64
	"*99999999999999999999999\r\n":             "elements",
	"*+1\r\n":                                  "elements",
	"$\r\n":                                    "length",
}

// TestScanAllocatesNothing: the guard reads every reply of every call, so
// following the replies of the lock's calls must not allocate once the
// scanner has grown to their depth (a header's length was parsed from a
// string made of the line, one allocation per reply).
func TestScanAllocatesNothing(t *testing.T) {
	replies := []byte("+OK\r\n:1\r\n$-1\r\n*2\r\n:1\r\n$2\r\n17\r\n$32\r\n0123456789abcdef0123456789abcdef\r\n-ERR x\r\n*3\r\n$8\r\nsmessage\r\n$2\r\nch\r\n$0\r\n\r\n")
	var s scanner
	if _, err := s.scan(replies); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := s.scan(replies); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("scanning the replies of a lock's calls allocated %v times, want 0", allocs)
	}
}

func scanAll(chunks ...string) error {
	var s scanner
	for _, c := range chunks {
		if _, err := s.scan([]byte(c)); err != nil {
			return err
		}
	}
	return nil
}

func TestValidPass(t *testing.T) {
	all := strings.Join(valid, "")
	if err := scanAll(all); err != nil {
		t.Fatalf("valid replies in one read: %v", err)
	}
	for _, r := range valid {
		for i := range len(r) {
			if err := scanAll(r[:i], r[i:]); err != nil {
				t.Errorf("%q split at %d: %v", r, i, err)
			}
		}
	}
	// Byte by byte, and the stack empty after every reply.
	var s scanner
	for i := range len(all) {
		if _, err := s.scan([]byte{all[i]}); err != nil {
			t.Fatalf("byte by byte, at %d: %v", i, err)
		}
	}
	if len(s.stack) != 0 || s.skip != 0 || len(s.line) != 0 {
		t.Errorf("after every reply, the scanner is not at a reply's start: %+v", s)
	}
}

func TestRefused(t *testing.T) {
	// The replies before the refused one are clean, to pass on.
	var s scanner
	if clean, err := s.scan([]byte("+OK\r\n:1\r\n*4000000000\r\n+OK\r\n")); clean != 9 || err == nil {
		t.Errorf("two replies, then a refused one: clean %d, error %v; want 9 and an error", clean, err)
	}
	s = scanner{}
	if _, err := s.scan([]byte("+OK\r\n*40000")); err != nil {
		t.Fatal(err)
	}
	if clean, err := s.scan([]byte("00000\r\n")); clean != 0 || err == nil {
		t.Errorf("a refused header split over two reads: clean %d, error %v; want 0 and an error", clean, err)
	}
	for r, says := range refused {
		err := scanAll(r)
		if err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("%.40q...: got %v, want an error that says %q", r, err, says)
		}
	}
}

// A guarded connection gives the client the replies within the limits, and
// breaks at the first beyond them: the client never reads its header, and
// every later read fails with ErrRefused too. It keeps the socket reachable.
func TestWrap(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.Write([]byte("+OK\r\n"))
		c.Write([]byte("*4000000000\r\n"))
		io.Copy(io.Discard, c)
	}()
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c := Wrap(raw)
	defer c.Close()
	if _, ok := c.(syscall.Conn); !ok {
		t.Error("the guard of a TCP connection is no syscall.Conn")
	}
	if u, ok := c.(interface{ NetConn() net.Conn }); !ok || u.NetConn() != raw {
		t.Error("NetConn does not return the connection under the guard")
	}
	var got []byte
	buf := make([]byte, 64)
	for {
		n, err := c.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "4000000000") {
				t.Errorf("read: %v, want ErrRefused naming the size", err)
			}
			break
		}
	}
	if string(got) != "+OK\r\n" {
		t.Errorf("the client read %q, want +OK and nothing of the refused reply", got)
	}
	if _, err := c.Read(buf); !errors.Is(err, ErrRefused) {
		t.Errorf("a read after the refusal: %v, want ErrRefused", err)
	}
}
