package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-redlock/redlock/redlock"
)

// TestErrorContractUnderFaults runs random calls of every kind (TryLock,
// Lock, Do, Extend, TTL, Unlock) against 1, 3 or 5 memory nodes that go down,
// stall, lose replies, slow down, and whose connections stall or drop, at
// random, in synctest bubbles (half of them with WithFencing, a third with
// Close in the middle), and
// checks the documented shape of every error: a call whose context had
// ended before it began, or when it returned (Do aside when fn ran: Do
// returns fn's error), has ctx.Err() in its error; an error whose votes
// (*VoteError) count failed nodes carries a *NodeError; one that matches
// ErrUnavailable has more failed nodes than a quorum allows. Do returns fn's
// error, and its panic with its value; fn's context, while its parent is
// live, ends only with ErrLockLost as its cause. The bubble must be left
// with no goroutine once the Client is closed. REDLOCK_FUZZ_SEEDS runs more
// schedules than the 40 by default (3000 passed at 65cacef).
func TestErrorContractUnderFaults(t *testing.T) {
	for seed := uint64(1); seed <= fuzzSeeds(); seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { errorContractSchedule(t, seed) })
	}
}

func errorContractSchedule(t *testing.T, seed uint64) {
	synctest.Test(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(seed, 77))
		var rmu sync.Mutex
		intn := func(n int) int {
			rmu.Lock()
			defer rmu.Unlock()
			return rng.IntN(n)
		}
		n := []int{1, 3, 5}[intn(3)]
		mem, nodes := memNodes(n)
		const ttl = time.Second
		opts := []redlock.Option{redlock.WithTTL(ttl), redlock.WithNodeTimeout(50 * time.Millisecond),
			redlock.WithBackoff(redlock.ConstantBackoff(30 * time.Millisecond))}
		if seed%2 == 0 {
			opts = append(opts, redlock.WithFencing())
		}
		c, err := redlock.New(nodes, opts...)
		if err != nil {
			t.Fatal(err)
		}
		var (
			emu  sync.Mutex
			errs []string
		)
		report := func(format string, args ...any) {
			emu.Lock()
			errs = append(errs, fmt.Sprintf(format, args...))
			emu.Unlock()
		}
		check := func(call string, ctx context.Context, before error, err error) {
			if err == nil {
				return
			}
			if before != nil && !errors.Is(err, before) {
				report("%s: ctx had ended before the call (%v), its error does not have it: %v", call, before, err)
			}
			if after := ctx.Err(); after != nil && call != "Do" && !errors.Is(err, after) && !errors.Is(err, redlock.ErrClosed) {
				report("%s: ctx had ended when the call returned (%v), its error does not have it: %v", call, after, err)
			}
			var ve *redlock.VoteError
			if errors.As(err, &ve) {
				var ne *redlock.NodeError
				if ve.Failed > 0 && !errors.As(err, &ne) {
					report("%s: %d failed nodes counted, no *NodeError: %v", call, ve.Failed, err)
				}
				if errors.Is(err, redlock.ErrUnavailable) && ve.Failed <= ve.Nodes-ve.Needed {
					report("%s: ErrUnavailable with %d failed of %d (%d needed): %v", call, ve.Failed, ve.Nodes, ve.Needed, err)
				}
			}
		}
		callCtx := func() (context.Context, context.CancelFunc) {
			switch intn(4) {
			case 0:
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				return ctx, cancel
			case 1:
				return context.WithTimeout(context.Background(), time.Duration(1+intn(120))*time.Millisecond)
			default:
				return context.WithTimeout(context.Background(), 3*time.Second)
			}
		}

		stop := make(chan struct{})
		var wg sync.WaitGroup
		// Faults.
		wg.Go(func() {
			for {
				select {
				case <-stop:
					for _, m := range mem {
						m.SetDown(false)
						m.SetStalled(false)
						m.SetLoseReplies(false)
						m.SetLatency(0)
						m.SetConnStalled(false)
						m.SetConnDown(false)
					}
					return
				case <-time.After(time.Duration(5+intn(80)) * time.Millisecond):
				}
				m := mem[intn(n)]
				on := intn(2) == 0
				switch intn(6) {
				case 4:
					m.SetConnStalled(on)
				case 5:
					m.SetConnDown(on)
				case 0:
					m.SetDown(on)
				case 1:
					m.SetStalled(on)
				case 2:
					m.SetLoseReplies(on)
				case 3:
					if on {
						m.SetLatency(time.Duration(intn(40)) * time.Millisecond)
					} else {
						m.SetLatency(0)
					}
				}
			}
		})
		keys := []string{"a", "b"}
		for range 4 {
			wg.Go(func() {
				for range 12 {
					key := keys[intn(len(keys))]
					ctx, cancel := callCtx()
					before := ctx.Err()
					var l *redlock.Lock
					var err error
					switch intn(3) {
					case 0:
						l, err = c.TryLock(ctx, key)
						check("TryLock", ctx, before, err)
					case 1:
						l, err = c.Lock(ctx, key)
						check("Lock", ctx, before, err)
					case 2:
						mine := errors.New("fn's own")
						var want error
						if intn(2) == 0 {
							want = mine
						}
						parent := ctx
						ran := false
						boom := intn(6) == 0
						func() {
							defer func() {
								if v := recover(); v != nil && v != "boom" {
									report("Do: panicked with %v, fn with boom", v)
								} else if v == nil && boom && ran {
									report("Do: fn panicked, Do returned %v", err)
								}
							}()
							err = c.Do(ctx, key, func(ctx context.Context) error {
								ran = true
								select {
								case <-time.After(time.Duration(intn(1500)) * time.Millisecond):
								case <-ctx.Done():
									if parent.Err() == nil && !errors.Is(context.Cause(ctx), redlock.ErrLockLost) {
										report("Do: fn's context ended with cause %v, not ErrLockLost, its parent live", context.Cause(ctx))
									}
								}
								if boom {
									panic("boom")
								}
								return want
							})
						}()
						if ran {
							check("Do", ctx, before, err)
						} else {
							// Lock's error (Do's doc), whose contract is
							// Lock's: not fn's error, which Do returns.
							check("Do, fn not run", ctx, before, err)
						}
						if ran && !boom && want != nil && !errors.Is(err, mine) && !errors.Is(err, redlock.ErrNotObtained) && !errors.Is(err, redlock.ErrLockLost) {
							report("Do: fn returned %v, Do returned %v", want, err)
						}
					}
					cancel()
					if l == nil {
						time.Sleep(time.Duration(intn(50)) * time.Millisecond)
						continue
					}
					for range intn(3) {
						ctx, cancel := callCtx()
						before := ctx.Err()
						if intn(2) == 0 {
							check("Extend", ctx, before, l.Extend(ctx, time.Duration(300+intn(1500))*time.Millisecond))
						} else {
							_, err := l.TTL(ctx)
							check("TTL", ctx, before, err)
						}
						cancel()
					}
					ctx, cancel = callCtx()
					before = ctx.Err()
					check("Unlock", ctx, before, l.Unlock(ctx))
					cancel()
				}
			})
		}
		time.Sleep(3 * time.Second)
		if seed%3 == 0 {
			if err := c.Close(); err != nil {
				t.Logf("Close: %v", err)
			}
		}
		close(stop)
		wg.Wait()
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		for _, e := range errs {
			t.Error(e)
		}
	})
}

// fuzzSeeds is how many schedules TestErrorContractUnderFaults runs: 40, or
// REDLOCK_FUZZ_SEEDS.
func fuzzSeeds() uint64 {
	var n uint64 = 40
	if s := os.Getenv("REDLOCK_FUZZ_SEEDS"); s != "" {
		fmt.Sscan(s, &n)
	}
	return n
}
