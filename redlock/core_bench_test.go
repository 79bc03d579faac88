package redlock_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redlock/redlock/redlock"
)

// BenchmarkCoreLockUnlock measures the algorithm's own cost: lock and unlock
// on five in-process nodes, without a network.
func BenchmarkCoreLockUnlock(b *testing.B) {
	for _, tc := range []struct {
		name string
		opts []redlock.Option
	}{
		{"plain", nil},
		{"fencing", []redlock.Option{redlock.WithFencing()}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			_, nodes := memNodes(5)
			c, err := redlock.New(nodes, tc.opts...)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			lockUnlockParallel(b, c)
		})
	}
}

// lockUnlockParallel runs Lock then Unlock on c from parallel goroutines,
// each over a ring of keys of its own: Unlock returns on a quorum, and the
// last releases may still be landing when the next lock of a key starts.
func lockUnlockParallel(b *testing.B, c *redlock.Client) {
	ctx := b.Context()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var keys [16]string
		for i := range keys {
			keys[i] = redlockKey()
		}
		for i := 0; pb.Next(); i++ {
			l, err := c.Lock(ctx, keys[i%len(keys)])
			if err != nil {
				b.Error(err)
				return
			}
			if err := l.Unlock(ctx); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

var keySeq atomic.Int64

func redlockKey() string { return fmt.Sprint("bench-", keySeq.Add(1)) }

// BenchmarkCallOptions measures TryLock and Unlock on three in-process nodes
// without options and with a per-call TTL: the path without options must not
// allocate more than it did before options existed.
func BenchmarkCallOptions(b *testing.B) {
	for _, tc := range []struct {
		name string
		opts []redlock.Option
	}{
		{"none", nil},
		{"WithTTL", []redlock.Option{redlock.WithTTL(time.Minute)}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			_, nodes := memNodes(3)
			c, err := redlock.New(nodes)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			ctx := b.Context()
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				l, err := c.TryLock(ctx, "k", tc.opts...)
				if err != nil {
					b.Fatal(err)
				}
				if err := l.Unlock(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
