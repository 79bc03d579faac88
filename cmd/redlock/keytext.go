package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// keyText is key as the command prints it in text for people (the table
// and verdicts of status, the messages of -v): as it is, or, when it would
// not show as itself on one line, quoted as strconv.Quote quotes it
// ("a\nb"). That is when it holds a character that strconv.IsPrint refuses
// (a control character such as a newline or a tab, a line separator, a
// space other than ' ') or bytes that are not UTF-8. A key that begins
// with '"' is quoted too, so that a key printed with quotes is always one
// that was quoted. The messages that name a key with %q quote every key
// already; --json gives it as it is (and, when it is not UTF-8, quoted in
// key_quoted too: see jsonKeyQuoted).
func keyText(key string) string {
	if key == "" || key[0] == '"' || !printable(key) {
		return strconv.Quote(key)
	}
	return key
}

// printable reports whether every character of s shows as itself: s is
// UTF-8 and strconv.IsPrint accepts each of its runes.
func printable(s string) bool {
	for s != "" {
		r, size := utf8.DecodeRuneInString(s)
		if (r == utf8.RuneError && size == 1) || !strconv.IsPrint(r) {
			return false
		}
		s = s[size:]
	}
	return true
}

// escapeUnprintable is text from a server that the command prints in a
// report (an error, a refusal, which may name a key as it is) with every
// character that does not show as itself escaped as strconv.Quote escapes
// it, and the rest unchanged: on one line, in the server's own words.
func escapeUnprintable(text string) string { return escapeExcept(text, "") }

// escapeExcept is escapeUnprintable that leaves the characters of keep as
// they are.
func escapeExcept(text, keep string) string {
	if printable(text) {
		return text
	}
	var b strings.Builder
	for text != "" {
		r, size := utf8.DecodeRuneInString(text)
		if c := text[:size]; printable(c) || (size == 1 && strings.ContainsRune(keep, r)) {
			b.WriteString(c)
		} else {
			q := strconv.Quote(c)
			b.WriteString(q[1 : len(q)-1])
		}
		text = text[size:]
	}
	return b.String()
}

// jsonKeyQuoted is the key_quoted of a key in the command's JSON (status
// --json, hold's line): key quoted as strconv.Quote quotes it when key is
// not UTF-8, which a JSON string cannot hold (encoding/json writes its bad
// bytes as U+FFFD, so that two such keys could come out the same), and ""
// otherwise (the field is then left out).
func jsonKeyQuoted(key string) string {
	if utf8.ValidString(key) {
		return ""
	}
	return strconv.Quote(key)
}

// messageWriter is the command's stderr: every message written to it goes out
// with escapeUnprintable's escapes but for its newlines and tabs. Messages
// carry text from the servers (their errors, through the library's), which
// may hold terminal controls: an escape sequence that sets the terminal's
// title or clears it, a carriage return that hides the start of a line. CMD
// of run writes to the real stderr, not through it.
type messageWriter struct{ w io.Writer }

// Write writes p escaped; it reports len(p) when the escaped text was
// written.
func (m messageWriter) Write(p []byte) (int, error) {
	s := escapeExcept(string(p), "\n\t")
	if len(s) == len(p) {
		return m.w.Write(p)
	}
	if _, err := io.WriteString(m.w, s); err != nil {
		return 0, err
	}
	return len(p), nil
}

// escapeC1 returns b, JSON from encoding/json, with the C1 control characters
// (U+0080 to U+009F) in its strings written \u0080 to \u009f, as
// encoding/json writes those below U+0020: the same JSON for a program, but
// nothing a terminal acts on (U+009B is CSI, as ESC [ is) when it is shown.
// Outside strings, JSON has only ASCII; encoding/json writes valid UTF-8,
// where 0xC2 followed by 0x80 to 0x9F is such a character.
func escapeC1(b []byte) []byte {
	var out []byte
	for i := 0; i < len(b); i++ {
		if b[i] == 0xC2 && i+1 < len(b) && 0x80 <= b[i+1] && b[i+1] <= 0x9F {
			if out == nil {
				out = append(make([]byte, 0, len(b)+16), b[:i]...)
			}
			out = fmt.Appendf(out, `\u%04x`, b[i+1])
			i++
			continue
		}
		if out != nil {
			out = append(out, b[i])
		}
	}
	if out == nil {
		return b
	}
	return out
}

// jsonWriter writes JSON from encoding/json's Encoder (one Write per value)
// with escapeC1's escapes.
type jsonWriter struct{ w io.Writer }

func (j jsonWriter) Write(p []byte) (int, error) {
	if _, err := j.w.Write(escapeC1(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}
