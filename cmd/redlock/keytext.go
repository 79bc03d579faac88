package main

import (
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
func escapeUnprintable(text string) string {
	if printable(text) {
		return text
	}
	var b strings.Builder
	for text != "" {
		_, size := utf8.DecodeRuneInString(text)
		if c := text[:size]; printable(c) {
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
