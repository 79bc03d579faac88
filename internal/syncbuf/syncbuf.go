// Package syncbuf is a buffer for tests that give a writer to code running on
// goroutines of its own (a command's stderr, the log package's output) and
// read what was written while that code may still write: a bytes.Buffer
// behind a mutex, which can also tell when some text has been written.
package syncbuf

import (
	"bytes"
	"sync"
)

// Buffer is an io.Writer that several goroutines may write and read at
// once. The zero Buffer is empty and ready to use.
type Buffer struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	waits []wait
}

// wait is a Seen that has not seen its text yet.
type wait struct {
	text string
	seen chan struct{}
}

// Write appends p, and closes the channels of the Seen calls whose text the
// buffer now holds.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, err := b.buf.Write(p)
	if len(b.waits) > 0 {
		kept := b.waits[:0]
		for _, w := range b.waits {
			if bytes.Contains(b.buf.Bytes(), []byte(w.text)) {
				close(w.seen)
			} else {
				kept = append(kept, w)
			}
		}
		b.waits = kept
	}
	return n, err
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Seen returns a channel that is closed once the buffer holds text, at once
// if it does already.
func (b *Buffer) Seen(text string) <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	seen := make(chan struct{})
	if bytes.Contains(b.buf.Bytes(), []byte(text)) {
		close(seen)
	} else {
		b.waits = append(b.waits, wait{text, seen})
	}
	return seen
}
