package redisserver

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// RedisError is an error reply from redis-server ("-ERR ...", "-NOAUTH ...",
// "-WRONGTYPE ..."), holding the reply text without the leading '-'.
// [Server.Do] returns it as its error; inside an array reply it appears as an
// element.
type RedisError string

// Error returns the reply text, e.g. "NOAUTH Authentication required.".
func (e RedisError) Error() string { return string(e) }

// maxBulk bounds the length of one bulk string reply (Redis' own limit).
const maxBulk = 512 << 20

// errProtocol reports a reply that is not valid RESP2.
var errProtocol = errors.New("redistest: invalid RESP reply")

// writeCommand writes args as a RESP2 array of bulk strings.
func writeCommand(w *bufio.Writer, args []string) error {
	fmt.Fprintf(w, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(w, "$%d\r\n%s\r\n", len(a), a)
	}
	return w.Flush()
}

// readReply reads one RESP2 reply: string for simple and bulk strings, int64
// for integers, nil for null bulk strings and arrays, []any for arrays and
// RedisError for errors.
func readReply(r *bufio.Reader) (any, error) {
	line, err := readLine(r)
	if err != nil {
		return nil, err
	}
	if line == "" {
		return nil, fmt.Errorf("%w: empty line", errProtocol)
	}
	switch kind, rest := line[0], line[1:]; kind {
	case '+':
		return rest, nil
	case '-':
		return RedisError(rest), nil
	case ':':
		n, err := strconv.ParseInt(rest, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: integer %q", errProtocol, rest)
		}
		return n, nil
	case '$':
		n, err := strconv.Atoi(rest)
		if err != nil || n < -1 || n > maxBulk {
			return nil, fmt.Errorf("%w: bulk length %q", errProtocol, rest)
		}
		if n == -1 {
			return nil, nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		if buf[n] != '\r' || buf[n+1] != '\n' {
			return nil, fmt.Errorf("%w: bulk string not ended by CRLF", errProtocol)
		}
		return string(buf[:n]), nil
	case '*':
		n, err := strconv.Atoi(rest)
		if err != nil || n < -1 {
			return nil, fmt.Errorf("%w: array length %q", errProtocol, rest)
		}
		if n == -1 {
			return nil, nil
		}
		elems := make([]any, 0, min(n, 1024))
		for range n {
			v, err := readReply(r)
			if err != nil {
				return nil, err
			}
			elems = append(elems, v)
		}
		return elems, nil
	default:
		return nil, fmt.Errorf("%w: unknown type %q", errProtocol, kind)
	}
}

// readLine reads one CRLF-terminated line and returns it without the CRLF.
func readLine(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		if errors.Is(err, io.EOF) {
			return "", io.ErrUnexpectedEOF
		}
		return "", err
	}
	if !strings.HasSuffix(line, "\r\n") {
		return "", fmt.Errorf("%w: line not ended by CRLF", errProtocol)
	}
	return line[:len(line)-2], nil
}
