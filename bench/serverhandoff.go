package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/go-redlock/redlock/driver"
)

// serverHandoffNodes is the number of nodes of the ServerHandoff case, the
// Handoff case's five.
const serverHandoffNodes = 5

// handOverScript is the release of the server-side hand-off that
// ServerHandoff measures: when KEYS[1] holds ARGV[1], it gives the key to the
// first value queued at KEYS[2] (SET PX ARGV[3]) and publishes that value on
// ARGV[2], or, with none queued, deletes the key and publishes "".
const handOverScript = `
if redis.call("GET", KEYS[1]) ~= ARGV[1] then
	return 0
end
local next = redis.call("LPOP", KEYS[2])
if next then
	redis.call("SET", KEYS[1], next, "PX", ARGV[3])
	redis.call("SPUBLISH", ARGV[2], next)
else
	redis.call("DEL", KEYS[1])
	redis.call("SPUBLISH", ARGV[2], "")
end
return 1`

// ServerHandoff measures, with go-redis by hand on five nodes and one
// waiter, what a hand-off made by the nodes themselves would save over the
// hand-off by release notice that every driver of this module makes, so that
// a change of protocol can be weighed before it is built. It runs both in
// turn, one hand-off of each at a time on keys of their own, each after the
// holder kept the key handoffHold, as the Handoff case does:
//   - notice: the release script deletes the key and publishes the release
//     (driver.ReleaseNotifyScript); the waiter, subscribed on every node,
//     sends SET NX PX to every node at its first notice and holds the key
//     once a majority granted it: the waiting floor's protocol (see
//     HandoffFloor), two round trips after the holder's release begins;
//   - server: the waiter has queued its value beside the key on every node
//     before the release; the release script (handOverScript) sets the key to
//     that value itself and publishes it, and the waiter holds the key once a
//     majority's notices name it: one round trip and a notice.
//
// The server protocol is measured for its messages alone: a library would
// also need the queued waiter's liveness, a validity dated from the
// waiter's registration (the key is set when the release runs, which the
// waiter does not see), and a way out of a hand-off that a majority did
// not make; none of that is here, and no Client makes this hand-off.
//
// It reports each protocol's hand-off p50 (notice-p50-ns, server-p50-ns),
// from the start of the holder's release to the waiter holding the key, and
// x-notice, the notice p50 over the server p50 (above 1 when the server
// hand-off is faster).
func ServerHandoff(b *testing.B) {
	addrs := Servers(b, serverHandoffNodes)
	ctx, cancel := runContext(b)
	defer cancel()
	var holder, waiter []*goredis.Client
	for _, a := range addrs {
		holder, waiter = append(holder, NewGoRedis(a)), append(waiter, NewGoRedis(a))
	}
	defer func() {
		for _, c := range slices.Concat(holder, waiter) {
			c.Close()
		}
	}()
	keys := newKeys("server-handoff", 2)
	h := &handoffPair{
		holder: holder, waiter: waiter, notices: make(chan string, 4*serverHandoffNodes),
		notice: goredis.NewScript(driver.ReleaseNotifyScript().Source()), server: goredis.NewScript(handOverScript),
		undo: goredis.NewScript(driver.ReleaseScript().Source()),
	}
	for _, c := range holder { // so that they run by EVALSHA, as a driver's releases do
		if err := errors.Join(h.notice.Load(ctx, c).Err(), h.server.Load(ctx, c).Err(), h.undo.Load(ctx, c).Err()); err != nil {
			b.Fatal(err)
		}
	}
	defer h.unsubscribe() // also those made before a subscription failed
	for _, key := range keys {
		if err := h.subscribe(ctx, key); err != nil {
			b.Fatal(err)
		}
	}
	var notice, server []int64
	b.ResetTimer()
	for i := range b.N {
		for _, srv := range []bool{i%2 == 0, i%2 != 0} { // each first in turn
			key := keys[0]
			if srv {
				key = keys[1]
			}
			d, err := h.handOff(ctx, key, i, srv)
			if err != nil {
				b.Fatalf("server=%t: %v", srv, err)
			}
			if srv {
				server = append(server, int64(d))
			} else {
				notice = append(notice, int64(d))
			}
		}
	}
	b.StopTimer()
	slices.Sort(notice)
	slices.Sort(server)
	n50, s50 := percentile(notice, 0.5), percentile(server, 0.5)
	b.ReportMetric(float64(n50), "notice-p50-ns")
	b.ReportMetric(float64(s50), "server-p50-ns")
	b.ReportMetric(float64(n50)/float64(s50), "x-notice")
}

// handoffPair is a holder and a waiter of ServerHandoff, each with a client
// per node, and the waiter's notices of every key it subscribed to.
type handoffPair struct {
	holder, waiter []*goredis.Client
	notices        chan string // payloads, both keys' (one hand-off runs at a time)
	subs           []*goredis.PubSub
	notice, server *goredis.Script // the releases of each protocol
	undo           *goredis.Script // the release script, which publishes nothing
}

// subscribe subscribes the waiter to key's release notices on every node.
func (h *handoffPair) subscribe(ctx context.Context, key string) error {
	for _, c := range h.waiter {
		ps := c.SSubscribe(ctx, driver.ReleaseChannel(key))
		h.subs = append(h.subs, ps)
		if _, err := ps.Receive(ctx); err != nil {
			return fmt.Errorf("SSUBSCRIBE: %w", err)
		}
		msgs := ps.Channel()
		go func() {
			for m := range msgs { // until unsubscribe closes ps
				select {
				case h.notices <- m.Payload:
				default: // never: a hand-off leaves five notices at most unread
				}
			}
		}()
	}
	return nil
}

// unsubscribe ends the waiter's subscriptions.
func (h *handoffPair) unsubscribe() {
	for _, ps := range h.subs {
		ps.Close()
	}
}

// handOff makes one hand-off of key from the holder to the waiter by the
// server protocol (srv) or by notice, and returns its time. Every call it
// makes has ended when it returns.
func (h *handoffPair) handOff(ctx context.Context, key string, i int, srv bool) (time.Duration, error) {
	held, next := "h"+strconv.Itoa(i), "w"+strconv.Itoa(i)
	queue := key + ":queue"
	err := onEvery(h.holder, func(c *goredis.Client) error {
		if ok, err := c.SetNX(ctx, key, held, time.Minute).Result(); err != nil || !ok {
			return errors.Join(errors.New("the holder's SET NX was refused"), err)
		}
		return nil
	})
	if srv && err == nil {
		err = onEvery(h.waiter, func(c *goredis.Client) error { return c.RPush(ctx, queue, next).Err() })
	}
	if err != nil {
		return 0, err
	}
	time.Sleep(handoffHold)
	for len(h.notices) > 0 { // none is due: drain strays
		<-h.notices
	}
	type taken struct {
		err  error
		wait func() error
	}
	got := make(chan taken, 1)
	takeCtx, stop := context.WithCancel(ctx)
	defer stop()
	start := time.Now()
	go func() { wait, err := h.take(takeCtx, key, next, srv); got <- taken{err, wait} }()
	n, released := majority(h.holder, func(c *goredis.Client) (bool, error) {
		var err error
		if srv {
			err = h.server.Run(ctx, c, []string{key, queue}, held, driver.ReleaseChannel(key), 60000).Err()
		} else {
			err = h.notice.Run(ctx, c, []string{key}, held, driver.ReleaseChannel(key)).Err()
		}
		return err == nil, err
	})
	if n <= serverHandoffNodes/2 {
		stop() // no majority released it: the waiter would wait in vain
	}
	t := <-got
	took := time.Since(start)
	err = errors.Join(t.err, released(), t.wait())
	for _, c := range h.holder { // the waiter's key, for the next hand-off
		err = errors.Join(err, c.Del(ctx, key, queue).Err())
	}
	return took, err
}

// take is the waiter's side of handOff: it returns once it holds key, with
// a wait for its calls still running.
func (h *handoffPair) take(ctx context.Context, key, value string, srv bool) (wait func() error, err error) {
	none := func() error { return nil }
	named := 0
	for {
		select {
		case p := <-h.notices:
			if !srv {
				n, wait := majority(h.waiter, func(c *goredis.Client) (bool, error) {
					return c.SetNX(ctx, key, value, time.Minute).Result()
				})
				if n > serverHandoffNodes/2 {
					return wait, nil
				}
				// Too early at some nodes: undo the grants, as a
				// waiter must, and wait for the next notice.
				err := errors.Join(wait(), onEvery(h.waiter, func(c *goredis.Client) error {
					return h.undo.Run(ctx, c, []string{key}, value).Err()
				}))
				if err != nil {
					return none, err
				}
				continue
			}
			if p == value {
				if named++; named > serverHandoffNodes/2 {
					return none, nil
				}
			}
		case <-ctx.Done():
			return none, errors.Join(errors.New("no hand-off"), ctx.Err())
		}
	}
}

// majority runs f on every client at once and returns, once more than half
// of them returned true or every call returned, how many returned true, and
// wait, which waits for the calls still running and returns their errors
// joined (a refusal, false, is no error: a waiter's SET NX may reach a node
// before the holder's release).
func majority(cs []*goredis.Client, f func(*goredis.Client) (bool, error)) (yes int, wait func() error) {
	type answer struct {
		ok  bool
		err error
	}
	res := make(chan answer, len(cs))
	for _, c := range cs {
		go func() { ok, err := f(c); res <- answer{ok, err} }()
	}
	var errs []error
	got := 0
	for got < len(cs) && yes <= len(cs)/2 {
		a := <-res
		got++
		if a.ok {
			yes++
		}
		errs = append(errs, a.err)
	}
	return yes, func() error {
		for ; got < len(cs); got++ {
			errs = append(errs, (<-res).err)
		}
		return errors.Join(errs...)
	}
}

// onEvery runs f on every client at once and returns their errors joined,
// once every call returned.
func onEvery(cs []*goredis.Client, f func(*goredis.Client) error) error {
	_, wait := majority(cs, func(c *goredis.Client) (bool, error) { return false, f(c) })
	return wait()
}
