package chaos_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/safety/chaos"
)

func TestOverlaps(t *testing.T) {
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	g := func(holder string, from, to int) chaos.Grant {
		return chaos.Grant{Holder: holder, Start: at(from), End: at(to)}
	}

	require.Empty(t, chaos.Overlaps(nil))
	require.Empty(t, chaos.Overlaps([]chaos.Grant{g("a", 0, 10), g("b", 10, 20), g("c", 25, 30)}),
		"intervals are half-open: one that starts as another ends does not overlap it")
	require.Empty(t, chaos.Overlaps([]chaos.Grant{g("a", 0, 10), g("empty", 5, 5), g("negative", 8, 2)}),
		"grants with no interval never overlap")

	got := chaos.Overlaps([]chaos.Grant{g("c", 30, 40), g("a", 0, 100), g("b", 10, 20), g("d", 200, 300)})
	require.Len(t, got, 2, "a long grant overlaps every grant inside it, not the ones after it")
	require.Equal(t, "a", got[0].First.Holder)
	require.Equal(t, "b", got[0].Second.Holder)
	require.Equal(t, 10*time.Millisecond, got[0].Duration())
	require.Equal(t, "c", got[1].Second.Holder)
	require.Contains(t, got[0].String(), "a and b both held for 10ms")

	got = chaos.Overlaps([]chaos.Grant{g("a", 0, 10), g("b", 5, 15), g("c", 12, 20)})
	require.Len(t, got, 2, "a chain of overlaps: a-b and b-c, not a-c")
	require.Equal(t, [2]string{"a", "b"}, [2]string{got[0].First.Holder, got[0].Second.Holder})
	require.Equal(t, [2]string{"b", "c"}, [2]string{got[1].First.Holder, got[1].Second.Holder})
}

func TestReport(t *testing.T) {
	t0 := time.Now()
	r := chaos.Report{
		Config: chaos.Config{Drivers: []string{"x", "y"}, Nodes: 5, Contenders: 1},
		Grants: []chaos.Grant{
			{Holder: "x/1", Start: t0, End: t0.Add(time.Second)},
			{Holder: "y/1", Start: t0.Add(time.Millisecond), End: t0.Add(2 * time.Second)},
		},
		Faults: map[chaos.Fault]int{chaos.Pause: 2, chaos.Cut: 1},
	}
	r.Overlaps = chaos.Overlaps(r.Grants)
	require.False(t, r.Safe())
	require.Equal(t, map[string]int{"x": 1, "y": 1}, r.GrantsByDriver())
	require.Equal(t, 3, r.FaultCount())
	s := r.String()
	for _, want := range []string{"grants: 2 (x 1, y 1)", "faults: 3 (cut 1, pause 2)", "overlaps: 1", "x/1 and y/1 both held"} {
		require.True(t, strings.Contains(s, want), "report %q lacks %q", s, want)
	}
}

func TestRunRejectsBadConfig(t *testing.T) {
	for _, c := range []chaos.Config{
		{},
		{Drivers: []string{"goredis"}, Nodes: 2},
		{Drivers: []string{"goredis"}, TTL: time.Second, NodeTimeout: time.Second},
		{Drivers: []string{"goredis"}, Duration: -time.Second},
		{Drivers: []string{"goredis"}, ProgressEvery: -time.Second},
		{Drivers: []string{"goredis"}, Faults: []chaos.Fault{"meteor"}},
		{Drivers: []string{"no-such-driver"}},
	} {
		_, err := chaos.Run(context.Background(), c)
		require.Error(t, err, "%+v", c)
	}
	// A node timeout the library refuses is refused by the configuration's
	// check, before any server starts, as every other bad setting is.
	_, err := chaos.Run(context.Background(), chaos.Config{Drivers: []string{"goredis"}, NodeTimeout: time.Microsecond})
	require.ErrorContains(t, err, "chaos: node timeout 1µs is shorter than 100µs")
}
