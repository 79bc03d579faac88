package main

import (
	"strings"
	"testing"
)

// dump is go tool trace -d=parsed's form (Go 1.26) of a goroutine created
// by the library, blocking in a select and woken, with other events between.
const dump = `M=-1 P=-1 G=-1 Sync Time=30877146027584 N=1 Trace=30877148143680 Mono=30877148143682 Wall=2026-12-03T21:39:46.64972667Z
M=14524 P=0 G=43 StateTransition Time=30877379047360 GoID=70 NotExist->Runnable Reason=""
TransitionStack=
	github.com/go-redlock/redlock/redlock.(*workers).work @ 0x840120
		/work/redlock/workers.go:24

Stack=
	github.com/go-redlock/redlock/redlock.(*workers).run @ 0x83fe3a
		/work/redlock/workers.go:20
	sync.(*WaitGroup).Go.func1 @ 0x49ada9
		/usr/local/go/src/sync/waitgroup.go:258

M=14524 P=0 G=70 StateTransition Time=30877379051840 GoID=70 Running->Waiting Reason="select"
TransitionStack=
	runtime.selectgo @ 0x467904
		/usr/local/go/src/runtime/select.go:351
	github.com/go-redlock/redlock/redlock.(*workers).work @ 0x83feb1
		/work/redlock/workers.go:28

Stack=
	runtime.selectgo @ 0x467904
		/usr/local/go/src/runtime/select.go:351

M=14524 P=0 G=1 Metric Time=30877148157696 Name="/sched/gomaxprocs:threads" Value=Value{Uint64(2)}
M=14524 P=0 G=43 StateTransition Time=30877379052032 GoID=70 Waiting->Runnable Reason=""
Stack=
	github.com/go-redlock/redlock/redlock.(*round).call @ 0x7e7df2
		/work/redlock/round.go:177
M=14524 P=0 G=43 StateTransition Time=30877379052099 GoID=71 NotExist->Runnable Reason=""
TransitionStack=
	context.WithDeadlineCause.func2 @ 0x840120
		/usr/local/go/src/context/context.go:24
M=14524 P=0 G=43 StateTransition Time=30877379052100 GoID=9 Waiting->Runnable Reason=""
`

func TestParse(t *testing.T) {
	c, err := parse(strings.NewReader(dump))
	if err != nil {
		t.Fatal(err)
	}
	if c.createdAll != 2 || c.createdLib != 1 || c.wakesAll != 2 || c.wakesLib != 1 {
		t.Errorf("created %d (library %d), wakes %d (library %d); want 2 (1), 2 (1)", c.createdAll, c.createdLib, c.wakesAll, c.wakesLib)
	}
	for _, want := range []string{"redlock.(*workers).work (from redlock.(*workers).run)", "context.WithDeadlineCause.func2 (from a timer or the runtime)"} {
		if c.created[want] != 1 {
			t.Errorf("created %q: %d, want 1 (all: %v)", want, c.created[want], c.created)
		}
	}
	for _, want := range []string{"select: redlock.(*workers).work", "(blocked where the trace does not say)"} {
		if c.wakes[want] != 1 {
			t.Errorf("wakes %q: %d, want 1 (all: %v)", want, c.wakes[want], c.wakes)
		}
	}

	// Per operation: the second run's counts over the first's.
	var b strings.Builder
	report(&b, &counts{created: map[string]int{}, wakes: map[string]int{"select: redlock.(*workers).work": 1}}, c, 2, 10)
	for _, want := range []string{"| goroutines created | 1.00 | 0.50 |", "| wakes | 1.00 | 0.50 |", "| 0.50 | `(blocked where the trace does not say)` |", "| 0.50 | `redlock.(*workers).work (from redlock.(*workers).run)` |"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "`select: redlock.(*workers).work`") {
		t.Errorf("report lists a label with no difference:\n%s", b.String())
	}
}

func TestStandard(t *testing.T) {
	for fn, want := range map[string]bool{
		"runtime.selectgo":         true,
		"internal/poll.(*FD).Read": true,
		"main.main":                true,
		"github.com/redis/go-redis/v9.(*baseClient).process":  false,
		"github.com/go-redlock/redlock/redlock.(*round).wait": false,
	} {
		if got := standard(fn); got != want {
			t.Errorf("standard(%q) = %v, want %v", fn, got, want)
		}
	}
}
