package main

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
)

// module is the library's module path; libraryFrame leaves out its bench
// module.
const module = "github.com/go-redlock/redlock/"

// counts are one trace's goroutines created and wakes, by label.
type counts struct {
	created, wakes       map[string]int
	createdLib, wakesLib int // those of the library (libraryFrame)
	createdAll, wakesAll int
	blocked              map[int64]blocking // by goroutine: where it waits
}

type blocking struct {
	label string
	lib   bool
}

// transition matches a goroutine's state transition in go tool trace
// -d=parsed's dump.
var transition = regexp.MustCompile(`StateTransition Time=\d+ GoID=(\d+) (\w+)->(\w+) Reason="([^"]*)"`)

// event is one goroutine transition and its two stacks: the goroutine's
// (TransitionStack) and that of the goroutine that made it happen (Stack).
type event struct {
	goid         int64
	from, to     string
	reason       string
	trans, stack []string // function names, innermost first
}

// parse reads go tool trace -d=parsed's dump and counts its goroutine
// creations and wakes.
func parse(r io.Reader) (*counts, error) {
	c := &counts{created: map[string]int{}, wakes: map[string]int{}, blocked: map[int64]blocking{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<24)
	var (
		ev     *event
		frames *[]string // the stack being read, if any
	)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "M="):
			if ev != nil {
				c.add(ev)
			}
			ev, frames = nil, nil
			if m := transition.FindStringSubmatch(line); m != nil {
				ev = &event{from: m[2], to: m[3], reason: m[4]}
				if _, err := fmt.Sscan(m[1], &ev.goid); err != nil {
					return nil, fmt.Errorf("goroutine id in %q: %w", line, err)
				}
			}
		case ev == nil:
		case line == "TransitionStack=":
			frames = &ev.trans
		case line == "Stack=":
			frames = &ev.stack
		case frames != nil && strings.HasPrefix(line, "\t") && !strings.HasPrefix(line, "\t\t"):
			fn, _, _ := strings.Cut(strings.TrimPrefix(line, "\t"), " @ ")
			*frames = append(*frames, fn)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if ev != nil {
		c.add(ev)
	}
	return c, nil
}

func (c *counts) add(ev *event) {
	switch {
	case ev.from == "NotExist" && ev.to == "Runnable":
		start := "(no stack)"
		if len(ev.trans) > 0 {
			start = ev.trans[0]
		}
		creator := outsideStd(ev.stack)
		from := short(creator)
		if len(ev.stack) == 0 {
			from = "a timer or the runtime" // time.AfterFunc, context's deadlines
		}
		c.created[short(start)+" (from "+from+")"]++
		c.createdAll++
		if libraryFrame(start) || libraryFrame(creator) {
			c.createdLib++
		}
	case ev.to == "Waiting":
		frame := outsideStd(ev.trans)
		reason, where := ev.reason, short(frame)
		if reason == "" {
			reason = "(no reason)"
		}
		if len(ev.trans) == 0 {
			where = "(no stack)"
		}
		c.blocked[ev.goid] = blocking{label: reason + ": " + where, lib: libraryFrame(frame)}
	case ev.from == "Waiting" && ev.to == "Runnable":
		b, ok := c.blocked[ev.goid]
		if !ok {
			b.label = "(blocked where the trace does not say)"
		}
		delete(c.blocked, ev.goid)
		c.wakes[b.label]++
		c.wakesAll++
		if b.lib {
			c.wakesLib++
		}
	}
}

// outsideStd returns the innermost of frames (function names, innermost
// first) outside the standard library, or the outermost when all are in it.
func outsideStd(frames []string) string {
	for _, f := range frames {
		if !standard(f) {
			return f
		}
	}
	if len(frames) == 0 {
		return ""
	}
	return frames[len(frames)-1]
}

// standard reports whether the function fn (as a trace names it:
// path/pkg.Func) is in the standard library (or package main): the first
// element of its import path has no dot.
func standard(fn string) bool {
	first, _, _ := strings.Cut(fn, "/")
	if !strings.Contains(fn, "/") {
		first, _, _ = strings.Cut(fn, ".")
	}
	return !strings.Contains(first, ".")
}

// libraryFrame reports whether fn is in the library's module, not in its
// bench module.
func libraryFrame(fn string) bool {
	return strings.HasPrefix(fn, module) && !strings.HasPrefix(fn, module+"bench")
}

// short returns fn without the library's module path.
func short(fn string) string { return strings.TrimPrefix(fn, module) }

// report writes the differences of b over a, divided by n, as markdown
// tables: the totals, then the top labels of each kind.
func report(w io.Writer, a, b *counts, n, top int) {
	per := func(x, y int) string { return fmt.Sprintf("%.2f", float64(y-x)/float64(n)) }
	fmt.Fprintf(w, "| per operation | all | library |\n|---|--:|--:|\n")
	fmt.Fprintf(w, "| goroutines created | %s | %s |\n", per(a.createdAll, b.createdAll), per(a.createdLib, b.createdLib))
	fmt.Fprintf(w, "| wakes | %s | %s |\n\n", per(a.wakesAll, b.wakesAll), per(a.wakesLib, b.wakesLib))
	for _, t := range []struct {
		title string
		a, b  map[string]int
	}{
		{"wakes, by why and where the goroutine blocked", a.wakes, b.wakes},
		{"goroutines created, by start function (and creator)", a.created, b.created},
	} {
		type row struct {
			label string
			d     int
		}
		var rows []row
		for l, v := range t.b {
			rows = append(rows, row{l, v - t.a[l]})
		}
		for l, v := range t.a {
			if _, ok := t.b[l]; !ok {
				rows = append(rows, row{l, -v})
			}
		}
		slices.SortFunc(rows, func(x, y row) int {
			if c := cmp.Compare(y.d, x.d); c != 0 {
				return c
			}
			return strings.Compare(x.label, y.label)
		})
		fmt.Fprintf(w, "| per operation | %s |\n|--:|---|\n", t.title)
		for i, r := range rows {
			if i == top || float64(r.d)/float64(n) < 0.005 {
				break
			}
			fmt.Fprintf(w, "| %.2f | `%s` |\n", float64(r.d)/float64(n), r.label)
		}
		fmt.Fprintln(w)
	}
}
