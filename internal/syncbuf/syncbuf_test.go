package syncbuf_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-redlock/redlock/internal/syncbuf"
)

// TestSeen: Seen's channel closes once the text is written, also across two
// writes and for text written before the call, and not before; String reads
// what goroutines write meanwhile (run with -race).
func TestSeen(t *testing.T) {
	var b syncbuf.Buffer
	early := b.Seen("ready")
	fmt.Fprint(&b, "rea")
	select {
	case <-early:
		t.Fatal("Seen closed before its text was written")
	default:
	}
	fmt.Fprint(&b, "dy\n")
	select {
	case <-early:
	case <-time.After(time.Second):
		t.Fatal("Seen not closed once its text was written across two writes")
	}
	select {
	case <-b.Seen("ready"):
	default:
		t.Fatal("Seen of text already written not closed at once")
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() { fmt.Fprintf(&b, "line %d\n", i) })
		_ = b.String()
	}
	wg.Wait()
	select {
	case <-b.Seen("line 7"):
	default:
		t.Fatalf("the goroutines' lines are missing:\n%s", b.String())
	}
}
