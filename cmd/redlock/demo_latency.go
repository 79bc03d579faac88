package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/go-redlock/redlock/internal/ctxend"
	"github.com/go-redlock/redlock/redlock"
)

// nodeLatencies is the demo's Observer: it keeps the duration of every call
// to each node, as the clients saw it (queueing included).
type nodeLatencies struct {
	redlock.NopObserver

	mu    sync.Mutex
	order []string // nodes in the order first seen
	calls map[string][]time.Duration
	errs  map[string]int
}

func newNodeLatencies() *nodeLatencies {
	return &nodeLatencies{calls: map[string][]time.Duration{}, errs: map[string]int{}}
}

// NodeCall records one call.
func (n *nodeLatencies) NodeCall(ctx context.Context, e redlock.NodeCall) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, seen := n.calls[e.Node]; !seen {
		n.order = append(n.order, e.Node)
	}
	n.calls[e.Node] = append(n.calls[e.Node], e.Duration)
	// A call cut by its caller's end is not the node's error: the part ends
	// its clients' calls by its deadline, and those in flight then fail
	// with "context deadline exceeded", as a node slower than the node
	// timeout does, whose call's caller is still waiting.
	if e.Err != nil && ctxend.Err(ctx) == nil {
		n.errs[e.Node]++
	}
}

// print writes a row per node. Errors do not count the calls cut when the
// part ended.
func (n *nodeLatencies) print(w io.Writer) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.order) == 0 {
		return
	}
	fmt.Fprintln(w, "\nPer-node latency of the contention part, every call as the clients saw it (redlock.WithObserver):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "node\tcalls\tp50\tp99\tmax\terrors\t")
	for _, node := range n.order {
		ds := n.calls[node]
		fmt.Fprintf(tw, "%s\t%d\t%v\t%v\t%v\t%d\t\n", node, len(ds),
			percentile(ds, 50), percentile(ds, 99), percentile(ds, 100), n.errs[node])
	}
	tw.Flush()
}
