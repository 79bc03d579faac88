package batch

import "time"

// fifo is a queue of *T for a Batcher's calls and a Gate's waiters.
// Abandoned entries stay in it until popped, so that abandoning costs no
// search.
type fifo[T any] struct {
	items []*T
	head  int
}

func (q *fifo[T]) len() int { return len(q.items) - q.head }

func (q *fifo[T]) push(x *T) {
	if q.head > 0 && q.head >= len(q.items)/2 {
		n := copy(q.items, q.items[q.head:])
		clear(q.items[n:])
		q.items = q.items[:n]
		q.head = 0
	}
	q.items = append(q.items, x)
}

func (q *fifo[T]) pop() *T {
	x := q.items[q.head]
	q.items[q.head] = nil
	q.head++
	if q.head == len(q.items) {
		q.items, q.head = q.items[:0], 0
	}
	return x
}

// oldestQueued returns how long the oldest entry of qs that is still queued
// has waited, or 0; waiting reports whether an entry is still queued, and
// since when.
func oldestQueued[T any](waiting func(*T) (time.Time, bool), qs ...*fifo[T]) time.Duration {
	var oldest time.Time
	for _, q := range qs {
		for i := q.head; i < len(q.items); i++ {
			if t, ok := waiting(q.items[i]); ok {
				if oldest.IsZero() || t.Before(oldest) {
					oldest = t
				}
				break
			}
		}
	}
	if oldest.IsZero() {
		return 0
	}
	return time.Since(oldest)
}
