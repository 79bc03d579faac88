package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
)

// barWidth is the width of a progress bar in characters.
const barWidth = 30

// progress shows how far a long run is: a bar redrawn in place on a terminal,
// plain lines elsewhere (a log, a pipe). Its methods are safe for concurrent
// use.
type progress struct {
	w   io.Writer
	tty bool

	mu     sync.Mutex
	shown  bool // a bar is on the current line (terminal only)
	decile int  // the last tenth reported (not a terminal)
}

// newProgress returns a progress that writes to w.
func newProgress(w io.Writer) *progress {
	p := &progress{w: w, decile: -1}
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	return p
}

// bar shows that frac (0 to 1) of the run is done, with a label. Away from a
// terminal it prints a line only when another tenth is done.
func (p *progress) bar(frac float64, label string) {
	frac = min(max(frac, 0), 1)
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.tty {
		if d := int(frac * 10); d > p.decile {
			p.decile = d
			fmt.Fprintf(p.w, "[%3.0f%%] %s\n", frac*100, label)
		}
		return
	}
	filled := int(frac * barWidth)
	fmt.Fprintf(p.w, "\r\x1b[K[%s%s] %3.0f%% %s", strings.Repeat("#", filled), strings.Repeat(".", barWidth-filled), frac*100, label)
	p.shown = true
}

// line prints a line of its own, above the bar on a terminal.
func (p *progress) line(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.shown = false
	}
	fmt.Fprintln(p.w, strings.TrimRight(s, "\n"))
}

// finish ends the bar's line.
func (p *progress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown {
		fmt.Fprintln(p.w)
		p.shown = false
	}
}
