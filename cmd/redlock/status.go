package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/internal/keystatus"
	"github.com/go-redlock/redlock/internal/plural"
	"github.com/go-redlock/redlock/internal/redisaddr"
	"github.com/go-redlock/redlock/redlock"
)

type statusOptions struct {
	nodeFlags
	prefix  string
	timeout time.Duration
	json    bool
}

func statusCommand() *cobra.Command {
	var o statusOptions
	cmd := &cobra.Command{
		Use:   "status [flags] KEY...",
		Short: "Show who holds a lock on every node: TTL and fencing counter",
		Long: `status asks every node about each KEY: whether the key is held there, its
remaining time to live, and its fencing counter: the counter from which the
next fenced grant (--fencing) draws its token, one above the largest among
the granting nodes. That is the counter of the key's hash slot
(redlock:fence:{TAG} on the nodes, TAG hashing to that slot, and with
--prefix P the prefix's own, Predlock:fence:{TAG}), which the slot's keys
share: on a quorum of the nodes it is at least the highest token granted to
any of them, and a node outside a grant's quorum can show less. Earlier
versions kept other counters, which the acquiring script still reads,
taking the largest, but never writes: with --prefix, the slot's counter
that every prefix shared (redlock:fence:{TAG}), and the per-key one
("{KEY}:fence"). Where a node has one, FENCE is the largest and all follow
it, as "42 (slot 42, shared 40, per-key 41)" ("slot -" when the slot has no
counter yet; --json: fence_slot, fence_shared and fence_legacy); an old
counter the user may not read, or that is not a number, counts as none, as
in the script. A node that answers for the key but not for its counter in
use (the user may not read it, NOPERM, or it holds no number) shows HELD
and TTL, FENCE "?" and why in ERROR (--json: held and ttl_ms, no fence,
the reason in fence_error). status prints the nodes that could not be
asked with their error. It never reads or prints a lock's value, which is the secret that
lets its holder extend and release it (but for a lock named as KEY's
counter, redlock:fence:{TAG} or Predlock:fence:{TAG}, whose value status
reads as KEY's counter: it says the counter is not a number, never what it
holds).

Each key gets a verdict: held (a quorum of the nodes hold it), free (a quorum
do not: it can be acquired now), or unknown (neither: the nodes that did not
answer could tip it either way, or, with an even number of nodes, it is held
on exactly half of them, a lock no one holds that blocks every acquisition
until it expires). A key that a node holds without an expiry (TTL none) was
not set by a lock, whose key always has one: the verdict line says so, as
such a key blocks the lock until someone deletes it.
It is a snapshot: a lock may be taken or released the moment after. A key
with a newline, a tab or another character that does not show as itself
(or that begins with '"') is printed quoted, as Go quotes a string ("a\nb");
--json gives every key as it is, and a key that is not UTF-8, which JSON
cannot hold (its bad bytes are U+FFFD in "key"), quoted in "key_quoted" too.

status talks to the nodes with go-redis whatever --driver run uses, and sends
PTTL on the key and GET on its fencing counters. Give the same --prefix as the
clients that take the locks. On a node that is a Redis Cluster
(redis://host:port?cluster=true&addr=host2:port2) it reads the cluster's slots
with CLUSTER NODES from the first seed that answers, and asks each key of the
primary that serves its slot (following a MOVED redirection; a key whose slot
is migrating, ASK, gets an error). A server that does not answer within
--timeout is asked nothing more: its other keys say so, and a stalled node
costs one timeout, not one for each key.

Exit codes:
  0    every key was asked of a quorum of the nodes
  69   fewer than a quorum of the nodes answered for some key
  1    as 69, but too many nodes for a quorum answered an error that
       retrying cannot fix (a wrong password, NOPERM, a TLS certificate)
  2    bad flags or arguments, no nodes, more than 64, a bad address, or
       two addresses of one server (the same run_id in INFO) or of one
       cluster (a node ID in both, a shard's primary beside its cluster
       included)

` + envHelp("nodes", "prefix", "timeout", "json"),
		Example: `  redlock status --nodes 10.0.0.1:6379,10.0.0.2:6379,10.0.0.3:6379 nightly-report
  REDLOCK_PREFIX=lock: redlock status deploy invoices
  redlock status --json deploy | jq '.keys[0].state'`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErrorf("status: no key: give one or more, as in: redlock status KEY...")
			}
			return nil
		},
		ValidArgsFunction: cobra.NoFileCompletions, // keys are names, not files
		RunE: func(cmd *cobra.Command, keys []string) error {
			return runStatus(cmd.Context(), cmd.OutOrStdout(), o, keys)
		},
	}
	f := cmd.Flags()
	o.addNodes(cmd)
	f.StringVar(&o.prefix, "prefix", "", "the --prefix that run and hold were given: put before each KEY on the nodes")
	f.DurationVar(&o.timeout, "timeout", 2*time.Second, "bounds the connection and each command to one node; a server that does not answer within it is asked nothing more")
	f.BoolVar(&o.json, "json", false, "print the report as JSON")
	return withEnv(cmd)
}

// The verdicts of status on a key.
const (
	keyHeld    = "held"    // a quorum of the nodes hold it
	keyFree    = "free"    // a quorum do not
	keyUnknown = "unknown" // neither
)

// statusReport is what status found, as --json prints it.
type statusReport struct {
	Nodes  int          `json:"nodes"`
	Quorum int          `json:"quorum"`
	Keys   []*keyReport `json:"keys"`
}

// keyReport is what status found about one key.
type keyReport struct {
	Key string `json:"key"` // without the prefix
	// KeyQuoted is Key quoted as strconv.Quote quotes it, given only for
	// a key that is not UTF-8: a JSON string cannot hold its bytes, which
	// Key then has as U+FFFD.
	KeyQuoted string `json:"key_quoted,omitempty"`
	State     string `json:"state"`
	HeldOn    int    `json:"held_on"`  // nodes that hold it
	Answered  int    `json:"answered"` // nodes that answered
	// Fence is the largest fencing counter among the nodes whose counter
	// was read (each node's Fence: the next fenced grant's token is above
	// it); omitted when none has one.
	Fence *uint64         `json:"fence,omitempty"`
	Nodes []keyNodeReport `json:"per_node"`
}

// keyNodeReport is what one node holds for a key.
type keyNodeReport struct {
	Addr string `json:"addr"` // without any password
	// Held says whether the node holds the key; omitted for a node that
	// could not be asked (Error).
	Held *bool `json:"held,omitempty"`
	// TTLMillis is the remaining time to live when held, -1 for a key
	// without one; omitted when not held.
	TTLMillis *int64 `json:"ttl_ms,omitempty"`
	// Fence is the counter from which the next fenced grant draws its
	// token on this node: the counter of the key's slot (and prefix), or
	// an old counter of earlier versions where that is larger (the
	// acquiring script reads them and takes the largest): the counter of
	// the slot that they shared between prefixes (a key with --prefix
	// only), and the per-key counter. FenceSlot, FenceShared and
	// FenceLegacy are the three, given only when the node has an old
	// counter (each only when it exists).
	Fence       *uint64 `json:"fence,omitempty"`
	FenceSlot   *uint64 `json:"fence_slot,omitempty"`
	FenceShared *uint64 `json:"fence_shared,omitempty"`
	FenceLegacy *uint64 `json:"fence_legacy,omitempty"`
	// FenceError is why the counter in use could not be read on a node
	// that answered for the key (Held and TTLMillis are given): the user
	// may not read it (NOPERM), or it holds no number. Fence and its
	// parts are omitted then.
	FenceError string `json:"fence_error,omitempty"`
	Error      string `json:"error,omitempty"`
	// Shard is, for a node that is a Redis Cluster, the primary asked: the
	// one that serves the key's slot.
	Shard string `json:"shard,omitempty"`
	// refused is the code of Error when retrying cannot fix it
	// (driver.PermanentCode: WRONGPASS, NOPERM, a TLS certificate, ...).
	refused string
}

func runStatus(ctx context.Context, w io.Writer, o statusOptions, keys []string) error {
	switch {
	case o.timeout <= 0:
		return usageErrorf("status: --timeout %v is not positive", o.timeout)
	}
	for _, k := range keys {
		if k == "" {
			return usageErrorf("status: a key is empty")
		}
		if err := keyLenError("status", o.prefix, k); err != nil {
			return err
		}
	}
	raw, err := o.addrs("status")
	if err != nil {
		return err
	}
	if len(raw) > redlock.MaxNodes { // no lock can be held on them: run and hold refuse them too
		return usageErrorf("status: %d nodes are more than %d, the most a Client takes (redlock.MaxNodes)", len(raw), redlock.MaxNodes)
	}
	addrs := make([]redisaddr.Node, len(raw))
	seen := make(map[string]int, len(raw)) // address -> its number
	for i, s := range raw {
		if addrs[i], err = redisaddr.ParseNode(s); err != nil {
			return usageErrorf("status: address %d: %v", i+1, err)
		}
		name := addrs[i].String()
		if j, ok := seen[name]; ok {
			return usageErrorf("status: addresses %d and %d are the same node %s: it would count twice towards the quorum", j, i+1, name)
		}
		seen[name] = i + 1
	}
	readers := make([]*keyReader, len(addrs))
	defer func() {
		for _, r := range readers {
			if r != nil {
				r.close()
			}
		}
	}()
	for i, a := range addrs {
		if readers[i], err = newKeyReader(a, o.timeout); err != nil {
			return usageErrorf("status: address %d: %v", i+1, err)
		}
	}
	rep := &statusReport{Nodes: len(addrs), Quorum: len(addrs)/2 + 1, Keys: make([]*keyReport, len(keys))}
	for i, k := range keys {
		rep.Keys[i] = &keyReport{Key: k, Nodes: make([]keyNodeReport, len(addrs))}
		rep.Keys[i].KeyQuoted = jsonKeyQuoted(k)
	}
	// Every node at once; a node's keys one after the other, each bounded by
	// the timeout.
	var wg sync.WaitGroup
	for n, a := range addrs {
		wg.Go(func() {
			r := readers[n]
			r.identify(ctx)
			for _, kr := range rep.Keys {
				nr := keyNodeReport{Addr: a.String()}
				cctx, cancel := context.WithTimeout(ctx, o.timeout)
				k, shard, rerr := r.read(cctx, o.prefix, o.prefix+kr.Key)
				cancel()
				nr.Shard = shard
				switch {
				case rerr != nil:
					nr.Error, nr.refused = rerr.Error(), driver.PermanentCode(rerr)
				case k.Held:
					ttl := k.TTL.Milliseconds()
					if k.TTL == keystatus.NoExpiry {
						ttl = -1
					}
					nr.Held, nr.TTLMillis = &k.Held, &ttl
				default:
					nr.Held = &k.Held
				}
				if rerr == nil && k.FenceErr != nil {
					nr.FenceError = k.FenceErr.Error()
				}
				if rerr == nil && k.FenceErr == nil {
					if c, ok := k.Counter(); ok {
						nr.Fence = &c
					}
					if k.SharedSet || k.LegacySet {
						if k.FenceSet {
							nr.FenceSlot = &k.Fence
						}
						if k.SharedSet {
							nr.FenceShared = &k.Shared
						}
						if k.LegacySet {
							nr.FenceLegacy = &k.Legacy
						}
					}
				}
				kr.Nodes[n] = nr
			}
		})
	}
	wg.Wait()
	for i, a := range readers {
		for j, b := range readers[:i] {
			if a.runID != "" && a.runID == b.runID {
				return usageErrorf("status: addresses %d (%s) and %d (%s) reach the same server (run_id %s): it would count twice towards the quorum", j+1, addrs[j], i+1, addrs[i], a.runID)
			}
			if id := sharesID(a.clusterIDs, b.clusterIDs); id != "" {
				return usageErrorf("status: addresses %d (%s) and %d (%s) reach the same Redis Cluster (node %s in both): it would count twice towards the quorum; %s", j+1, addrs[j], i+1, addrs[i], id, clusterSeedsHint)
			}
		}
	}
	unavailable := false
	// The codes retrying cannot fix of the first key that too many nodes for
	// a quorum answered with one, each once, in the nodes' order: they need
	// not be the same (a wrong password on one node, none on another).
	refused := ""
	for _, kr := range rep.Keys {
		n := 0
		var codes []string
		for _, nr := range kr.Nodes {
			if nr.refused != "" {
				if n++; !slices.Contains(codes, nr.refused) {
					codes = append(codes, nr.refused)
				}
			}
		}
		if n > rep.Nodes-rep.Quorum && refused == "" {
			refused = plural.Or(codes)
		}
		for _, nr := range kr.Nodes {
			if nr.Error != "" {
				continue
			}
			kr.Answered++
			if *nr.Held {
				kr.HeldOn++
			}
			if nr.Fence != nil && (kr.Fence == nil || *nr.Fence > *kr.Fence) {
				kr.Fence = nr.Fence
			}
		}
		switch {
		case kr.HeldOn >= rep.Quorum:
			kr.State = keyHeld
		case kr.Answered-kr.HeldOn >= rep.Quorum:
			kr.State = keyFree
		default:
			kr.State = keyUnknown
		}
		if kr.Answered < rep.Quorum {
			unavailable = true
		}
	}

	if o.json {
		enc := json.NewEncoder(jsonWriter{w})
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		printStatus(w, rep)
	}
	if refused != "" {
		// As run and hold exit 1, not 69, for such nodes: a script that
		// retries on 69 would retry a wrong password for ever.
		return exitWith(exitFailure, fmt.Errorf("status: fewer than a quorum (%d) of the %d %s answered: too many answer an error that retrying cannot fix (%s)", rep.Quorum, rep.Nodes, plural.Nodes(rep.Nodes), refused))
	}
	if unavailable {
		return exitWith(exitUnavailable, fmt.Errorf("status: fewer than a quorum (%d) of the %d %s answered", rep.Quorum, rep.Nodes, plural.Nodes(rep.Nodes)))
	}
	return nil
}

// printStatus writes the readable report: a table of every key on every
// node, then a verdict for each key, each key on one line (keyText).
func printStatus(w io.Writer, rep *statusReport) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tNODE\tHELD\tTTL\tFENCE\tERROR")
	for _, kr := range rep.Keys {
		for _, nr := range kr.Nodes {
			if nr.Error != "" {
				fmt.Fprintf(tw, "%s\t%s\t?\t?\t?\t%s\n", keyText(kr.Key), nr.Addr, escapeUnprintable(nr.Error))
				continue
			}
			held, ttl, fence := "no", "-", "-"
			if *nr.Held {
				held = "yes"
				if *nr.TTLMillis < 0 {
					ttl = "none"
				} else {
					ttl = (time.Duration(*nr.TTLMillis) * time.Millisecond).String()
				}
			}
			if nr.Fence != nil {
				fence = fmt.Sprint(*nr.Fence)
			}
			if nr.FenceShared != nil || nr.FenceLegacy != nil {
				fence += " (" + fenceParts(nr) + ")"
			}
			if nr.FenceError != "" {
				fence = "?"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", keyText(kr.Key), nr.Addr, held, ttl, fence, escapeUnprintable(nr.FenceError))
		}
	}
	tw.Flush()
	fmt.Fprintln(w)
	for _, kr := range rep.Keys {
		fmt.Fprintf(w, "%s: %s: held on %d of %d %s, %d answered, quorum %d%s\n",
			keyText(kr.Key), kr.State, kr.HeldOn, rep.Nodes, plural.Nodes(rep.Nodes), kr.Answered, rep.Quorum, noExpiryNote(kr))
	}
}

// fenceParts names the counters behind a node's FENCE when it has an old
// one: "slot 42, per-key 41", "slot -, shared 40" ("-" when the slot's
// counter does not exist yet).
func fenceParts(nr keyNodeReport) string {
	parts := []string{"slot -"}
	if nr.FenceSlot != nil {
		parts[0] = fmt.Sprintf("slot %d", *nr.FenceSlot)
	}
	if nr.FenceShared != nil {
		parts = append(parts, fmt.Sprintf("shared %d", *nr.FenceShared))
	}
	if nr.FenceLegacy != nil {
		parts = append(parts, fmt.Sprintf("per-key %d", *nr.FenceLegacy))
	}
	return strings.Join(parts, ", ")
}

// noExpiryNote returns what the verdict line of kr adds when some node
// holds the key without an expiry (TTL "none"), or "": a lock's key always
// has one (its SET NX PX sets it at once), so such a key was written by
// something else under the lock's name, and it keeps every lock of that
// name from being taken until someone deletes it.
func noExpiryNote(kr *keyReport) string {
	n := 0
	for _, nr := range kr.Nodes {
		if nr.Error == "" && *nr.Held && *nr.TTLMillis < 0 {
			n++
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" (no expiry on %d of them: not a lock's key, which always has one; it blocks the lock until deleted)", n)
}
