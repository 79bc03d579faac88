package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/go-redlock/redlock/internal/attemptcap"
	"github.com/go-redlock/redlock/internal/plural"
	"github.com/go-redlock/redlock/internal/redisaddr"
	"github.com/go-redlock/redlock/redlock"
)

// connectTimeout is how long run and hold wait at most, before their first
// attempt to take the lock, for the nodes to connect (Client.Connect);
// longer with a --node-timeout over it.
const connectTimeout = 5 * time.Second

// lockFlags are the flags of the commands that take a lock: run and hold.
type lockFlags struct {
	nodeFlags
	key          string // --key, run's alias of its positional KEY
	prefix       string
	ttl          time.Duration
	nodeTimeout  time.Duration // 0: the library's default
	wait         time.Duration
	waitSet      bool // --wait given; otherwise wait as long as it takes
	fencing      bool
	conflictCode int
	verbose      bool
	// watchParent ends the wait, or the holding, when the process that
	// started redlock ends, as a stop signal does (hold without
	// --outlive-parent; see watchParent).
	watchParent bool
	// cmdName is the command that run runs under the lock, whose fate the
	// line of a lost lock tells; "" for hold.
	cmdName string
}

// add adds the flags to cmd.
func (o *lockFlags) add(cmd *cobra.Command) {
	f := cmd.Flags()
	o.addNodes(cmd)
	o.addDriver(cmd)
	f.StringVar(&o.prefix, "prefix", "", "put this before KEY on the nodes, for a namespace an ACL rule can name (give status and doctor the same; with --fencing, the prefix the library's clients of the key use: each prefix draws tokens from counters of its own)")
	f.DurationVar(&o.ttl, "ttl", redlock.DefaultTTL, "the lock's time to live; it is extended every TTL/3 while held")
	f.DurationVar(&o.nodeTimeout, "node-timeout", 0, "bounds each call to one node; a node slower than this counts as failed (default, or 0: TTL/10, at most 200ms; else at least 100µs; the connections are made before, in up to 5s, or this if longer, or half a --wait past 0 if shorter); one over about TTL/3 makes the extensions more frequent than every TTL/3")
	f.DurationVar(&o.wait, "wait", 0, "how long to wait for the lock; the first attempt always runs to its end; 0 tries once (default: as long as it takes)")
	f.BoolVar(&o.fencing, "fencing", false, "give the lock a fencing token, a number that rises with every grant of the key")
	f.IntVar(&o.conflictCode, "conflict-exit-code", exitConflict, "the exit code when the lock is held elsewhere past --wait, 0 to 255 (flock -E) but 69 and 76, this command's own for too many nodes failed and a lost lock; with 0, nothing is printed of it without -v")
	f.BoolVarP(&o.verbose, "verbose", "v", false, "tell on stderr what happens to the lock: the wait, the grant, failed extensions, its loss, the release")
}

// check returns a usage error for a bad flag; name is the command's.
func (o *lockFlags) check(cmd *cobra.Command, name string) error {
	o.waitSet = cmd.Flags().Changed("wait")
	switch {
	case o.key == "":
		// Given, and empty (run's and hold's arguments say when none is
		// given): "no key" sent the user looking for a missing argument,
		// when a variable was empty.
		return usageErrorf("%s: the key is empty (\"\"): give the lock's name, as in: redlock %s KEY", name, name)
	case o.waitSet && o.wait < 0:
		return usageErrorf("%s: --wait %v is negative", name, o.wait)
	case o.ttl <= 0:
		return usageErrorf("%s: --ttl %v is not positive", name, o.ttl)
	case o.ttl > redlock.MaxTTL:
		return usageErrorf("%s: --ttl %v is longer than %v", name, o.ttl, redlock.MaxTTL)
	case o.nodeTimeout < 0:
		return usageErrorf("%s: --node-timeout %v is negative", name, o.nodeTimeout)
	case o.nodeTimeout > 0 && o.nodeTimeout < redlock.MinNodeTimeout:
		return usageErrorf("%s: --node-timeout %v is shorter than %v: no node answers that fast, and a call that times out leaves its outcome unknown (its key may stay set until its TTL)", name, o.nodeTimeout, redlock.MinNodeTimeout)
	case o.nodeTimeout >= o.ttl:
		return usageErrorf("%s: --node-timeout %v is not smaller than --ttl %v", name, o.nodeTimeout, o.ttl)
	case o.conflictCode < 0 || o.conflictCode > 255:
		return usageErrorf("%s: --conflict-exit-code %d is not between 0 and 255", name, o.conflictCode)
	case o.conflictCode == exitUnavailable || o.conflictCode == exitLockLost:
		// flock -E takes any code, but flock has no other outcome of the
		// lock to tell: here a script could not tell a busy lock (CMD did
		// not run) from a lost one (CMD was stopped midway).
		return usageErrorf("%s: --conflict-exit-code %d is %s's own code for another outcome, which a busy lock must not be taken for: it exits %d when too many nodes failed for a quorum, %d when the lock was lost; give another (default %d)",
			name, o.conflictCode, name, exitUnavailable, exitLockLost, exitConflict)
	case o.driver == "memory":
		return usageErrorf("%s: the memory driver keeps its locks inside one process; use goredis, redigo, rueidis or valkeygo", name)
	case !slices.Contains(redlock.Drivers(), o.driver):
		return usageErrorf("%s: unknown driver %q; the drivers are goredis, redigo, rueidis and valkeygo", name, o.driver)
	}
	return keyLenError(name, o.prefix, o.key)
}

// keyLenError returns a usage error of the command name if prefix and key
// do not fit in a lock's key on the nodes (redlock.MaxKeyLen), and nil if
// they do.
func keyLenError(name, prefix, key string) error {
	switch {
	case len(prefix) >= redlock.MaxKeyLen:
		return usageErrorf("%s: --prefix of %d bytes leaves no room for a key", name, len(prefix))
	case len(prefix)+len(key) > redlock.MaxKeyLen:
		return usageErrorf("%s: key of %d bytes (prefix included) is longer than %d", name, len(prefix)+len(key), redlock.MaxKeyLen)
	}
	return nil
}

// heldLock is what the function of withLock learns about the lock it holds.
type heldLock struct {
	token uint64
	until time.Time // the validity at the grant; extended while held
	// sigs delivers the caught signals while the function runs.
	sigs <-chan os.Signal
	// lossCause says why the lock was lost, once (see
	// lockEvents.lossCause).
	lossCause func() string
}

// errWaitOver is the cause of a wait for the lock that --wait ended.
var errWaitOver = errors.New("--wait is over")

// signalError is the cause of a wait ended by a signal.
type signalError struct{ sig os.Signal }

func (e signalError) Error() string { return "received " + e.sig.String() }

// withLock opens the Client, waits for the lock as the flags say and runs fn
// while holding it, through Client.Do: the lock is extended while fn runs,
// fn's context is canceled with ErrLockLost as its cause when the lock is
// lost, and the lock is released when fn returns. The signals in caught end
// the wait; while fn runs, they are delivered to it. name is the command's,
// for messages.
//
// It returns nil or an *exitError: the conflict code when the key is held
// elsewhere, exitUnavailable when too many nodes failed, 128+N and the
// signal (exitError.signal) for a signal that ended the wait, exitLockLost when the lock was lost while fn ran or
// found gone by a quorum at the release (with run's command's exit status,
// 0 included, or that it did not run, in the message then), fn's error
// otherwise.
func withLock(ctx context.Context, name string, o *lockFlags, stderr io.Writer, caught []os.Signal, fn func(ctx context.Context, l heldLock) error) error {
	addrs, err := o.addrs(name)
	if err != nil {
		return err
	}
	// From here on, the signals are caught: while waiting they end the wait,
	// and while fn runs they go to fn. But a signal ignored when redlock
	// started (nohup ignores SIGHUP, a shell SIGINT in a command it starts
	// in the background) stays ignored, by redlock and by the command run
	// starts, which inherits it, as flock(1) leaves it: catching it would
	// reset it to its default in the command.
	sigs := make(chan os.Signal, 8)
	if caught = slices.DeleteFunc(slices.Clone(caught), signal.Ignored); len(caught) > 0 {
		signal.Notify(sigs, caught...) // with none, Notify would relay every signal
	}
	defer signal.Stop(sigs)
	if o.watchParent {
		// Delivered as the signals are, unless sigs is full of them.
		stopWatch := watchParent(func(p parentEnded) {
			select {
			case sigs <- p:
			default:
			}
		})
		defer stopWatch()
	}

	events := &lockEvents{addrs: addrs, ttl: o.ttl, verbose: o.verbose, warnUnavailable: !o.waitSet || o.wait > 0, oneAttempt: o.waitSet && o.wait == 0, stderr: stderr, firstDone: make(chan struct{})}
	opts := []redlock.Option{redlock.WithTTL(o.ttl), redlock.WithObserver(events)}
	if o.fencing {
		opts = append(opts, redlock.WithFencing())
	}
	if o.prefix != "" {
		opts = append(opts, redlock.WithKeyPrefix(o.prefix))
	}
	if o.nodeTimeout != 0 {
		opts = append(opts, redlock.WithNodeTimeout(o.nodeTimeout))
	}
	// check made sure that the driver is registered (and not memory).
	client, err := redlock.Open(o.driver, addrs, opts...)
	if err != nil {
		// Its errors ("address N: ...", a repeated address) begin with
		// "redlock: ", which execute prints once, before name.
		return usageErrorf("%s: %s", name, strings.TrimPrefix(err.Error(), "redlock: "))
	}
	defer client.Close()

	// The wait ends with a signal, or when --wait is over; never once fn
	// runs, whose context Do derives from this one. --wait bounds the wait
	// after a first attempt, not that attempt: a --wait shorter than a round
	// trip to the nodes makes one attempt, as --wait 0 does, rather than
	// cancel it and call a free lock held elsewhere.
	waitCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stopWatch := make(chan struct{})
	firstDone := events.firstDone
	var watch sync.WaitGroup
	watch.Go(func() {
		var over <-chan time.Time
		if o.waitSet && o.wait > 0 {
			t := time.NewTimer(o.wait)
			defer t.Stop()
			over = t.C
		}
		overDue := false
		for {
			select {
			case sig := <-sigs:
				cancel(signalError{sig})
				return
			case <-over:
				over, overDue = nil, true
			case <-firstDone:
				firstDone = nil
			case <-stopWatch:
				return
			}
			if overDue && firstDone == nil {
				if !events.grantedFirst() { // else fn is about to run
					cancel(errWaitOver)
					return
				}
				overDue = false
			}
		}
	})
	endWatch := sync.OnceFunc(func() { close(stopWatch); watch.Wait() })
	defer endWatch()

	// The nodes connect before the first attempt (Client.Connect), bounded
	// by the wait's context (a signal ends it), by connectTimeout and by
	// half a --wait past 0 (the other half is the attempts'), not by the
	// node timeout of the attempt: a fresh process dials every node (TCP,
	// TLS, AUTH, HELLO) within its first attempt otherwise, which on a
	// loaded machine took longer than the node timeout, so that run --wait
	// 0, with only that attempt, exited 69 (too many nodes failed) on nodes
	// that were up and would have answered 75 or granted the lock. Connect
	// returns once a quorum has answered and a node timeout more has
	// passed (a node down or stalled does not hold up a lock the others
	// can decide), or once too many have failed for a quorum; a node that
	// failed counts for no quorum (TestWaitZeroSlowConnectNodeDown). Its
	// error is not told: the attempt tells the nodes' errors, in the
	// command's words.
	connectBound := max(connectTimeout, client.NodeTimeout()) // --node-timeout's or the library's default
	if o.waitSet && o.wait > 0 {
		connectBound = min(connectBound, o.wait/2)
	}
	connectCtx, endConnect := context.WithTimeout(waitCtx, connectBound)
	_ = client.Connect(connectCtx)
	endConnect()

	var callOpts []redlock.Option
	if o.waitSet && o.wait == 0 {
		callOpts = append(callOpts, redlock.WithMaxAttempts(1))
	}
	ran, lost := false, false
	called := false // fn was called
	var fnErr error // and returned this
	err = client.Do(waitCtx, o.key, func(ctx context.Context) error {
		endWatch()
		ran = true
		switch cause := context.Cause(ctx); {
		case errors.Is(cause, redlock.ErrLockLost): // already: do not start
			lost = true
			return nil
		case cause != nil: // a signal, or the end of --wait, as the lock was granted
			ran = false
			return cause
		}
		token, until := events.granted()
		called = true
		fnErr = fn(ctx, heldLock{token: token, until: until, sigs: sigs, lossCause: events.lossCause})
		lost = errors.Is(context.Cause(ctx), redlock.ErrLockLost)
		return fnErr
	}, callOpts...)
	endWatch()
	if err == nil {
		return nil
	}

	if !ran {
		return notObtained(name, o, err, context.Cause(waitCtx))
	}
	if errors.Is(err, redlock.ErrLockLost) && !lost {
		// Found gone at the release: lost while fn ran, unless the release
		// could not reach a quorum, which proves nothing.
		if called, uerr := events.unlocked(); called && errors.Is(uerr, redlock.ErrUnavailable) {
			// The Client repeats the failed releases in the background
			// until Close, which waits for those in flight: what they
			// did is known once it returns.
			client.Close()
			// Without ErrLockLost, which Unlock joins to a release it
			// could not confirm: "redlock: lock lost" on a line of its
			// own would tell a loss, of a lock held to its release.
			if rest := withoutJoined(uerr, isLockLost, false); rest != nil {
				uerr = rest
			}
			fmt.Fprintf(stderr, "redlock: %s: %s:\n%v\n", name, releaseFailedText(o.key, events), uerr)
			err = withoutJoined(err, isLockLost, false)
			if err == nil {
				return nil
			}
		} else {
			lost = true
		}
	}
	var ee *exitError
	if lost {
		return exitWith(exitLockLost, errors.New(lostMessage(name, o.key, o.cmdName, called, fnErr, events.lossCause())))
	}
	if errors.As(err, &ee) {
		return ee
	}
	// The library's errors begin with "redlock: ", which execute prints
	// once, before name.
	return exitWith(exitFailure, fmt.Errorf("%s: %s", name, strings.TrimPrefix(err.Error(), "redlock: ")))
}

// withoutJoined returns err without the errors joined in it (by
// errors.Join, or any error with Unwrap() []error) that drop reports: in
// err's own joins, or with deep in the joins within them at any depth too;
// err itself when it joins nothing and drop does not report it. A join
// left with one error gives that error; one left with none is dropped
// whole, and nil is returned when nothing is left.
//
// The command drops so the sentinels it tells in its own words:
//   - Do's ErrLockLost (isLockLost), or Unlock's error, which matches it:
//     "redlock: lock lost" on a line of its own would tell a loss;
//   - the context.Canceled that the library joins to a wait that --wait
//     ended (the wait's context is canceled with errWaitOver as its
//     cause), at any depth: Lock joins it to its error, and an attempt
//     judged after the wait ended has it in its own verdict, which Lock's
//     error joins; it would end the message with "context canceled", as
//     if something had canceled run; the message says "within --wait";
//   - ErrNotObtained, at any depth (its own line, "redlock: lock not
//     obtained", after the command's "lock KEY not obtained"): the votes
//     and the nodes' errors are what is left to say.
//
// For the last two, the callers keep err when nothing else is left.
func withoutJoined(err error, drop func(error) bool, deep bool) error {
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		if drop(err) {
			return nil
		}
		return err
	}
	var rest []error
	for _, e := range j.Unwrap() {
		if drop(e) {
			continue
		}
		if deep {
			if e = withoutJoined(e, drop, true); e == nil {
				continue
			}
		}
		rest = append(rest, e)
	}
	switch len(rest) {
	case 0:
		return nil
	case 1:
		return rest[0]
	}
	return errors.Join(rest...)
}

// isLockLost reports whether err matches ErrLockLost.
func isLockLost(err error) bool { return errors.Is(err, redlock.ErrLockLost) }

// isCanceled reports whether err is context.Canceled itself.
func isCanceled(err error) bool { return err == context.Canceled }

// isNotObtained reports whether err is ErrNotObtained itself.
func isNotObtained(err error) bool { return err == redlock.ErrNotObtained }

// notObtained is the outcome of a Do whose function did not run: the lock
// was not obtained (err), or it was and cause ended the wait as it was.
func notObtained(name string, o *lockFlags, err, cause error) error {
	var serr signalError
	if errors.As(cause, &serr) || errors.As(err, &serr) {
		return exitBySignal(serr.sig, fmt.Errorf("%s: %v while waiting for the lock %q; it was not held", name, serr.sig, o.key))
	}
	// --wait 0 is one attempt, which the library's cap (WithMaxAttempts)
	// makes so: the message says --wait 0, not the option, whose line
	// ("gave up after 1 attempt (WithMaxAttempts)") the library joins to its
	// verdict.
	within, oneAttempt := " within "+o.wait.String(), ""
	switch {
	case !o.waitSet:
		within = "" // only an error ends an endless wait
	case o.wait == 0:
		within, oneAttempt = "", " (--wait 0: one attempt)"
	}
	detail := attemptcap.Without(err)
	if errors.Is(cause, errWaitOver) {
		detail = cmp.Or(withoutJoined(detail, isCanceled, true), detail)
	}
	detail = cmp.Or(withoutJoined(detail, isNotObtained, true), detail)
	var votes *redlock.VoteError
	switch {
	case errors.As(err, &votes) && votes.Permanent > votes.Nodes-votes.Needed:
		return exitWith(exitFailure, fmt.Errorf("%s: lock %q not obtained: the nodes answer an error that retrying cannot fix:\n%w", name, o.key, detail))
	case errors.Is(err, redlock.ErrUnavailable):
		// The verdict names every failed node with its error, also the
		// nodes that -v told on their own lines: a tail of the output
		// (systemctl status, a Kubernetes termination message) holds it
		// whole, and its errors are the last attempt's.
		addrs, _ := o.addrs(name)
		if hints := tlsHints(context.Background(), addrs, err); len(hints) > 0 {
			detail = errors.Join(detail, errors.New(strings.Join(hints, "\n")))
		}
		return exitWith(exitUnavailable, fmt.Errorf("%s: lock %q not obtained%s: too many nodes failed for a quorum%s:\n%w", name, o.key, within, oneAttempt, detail))
	case errors.Is(err, redlock.ErrSameServer):
		// A bad address, as status and doctor have it: one server given
		// twice, which retrying cannot fix.
		msg := strings.TrimPrefix(err.Error(), "redlock: ")
		if errors.Is(err, redisaddr.ErrSameCluster) { // msg ends with redisaddr.ClusterSeedsHint
			msg += clusterCommaNote
		}
		return exitWith(exitUsage, fmt.Errorf("%s: %s", name, msg))
	case errors.Is(err, redlock.ErrNotObtained), errors.Is(cause, errWaitOver):
		if o.conflictCode == 0 && !o.verbose {
			return exitWith(exitOK, nil) // a busy lock is no error, as flock -E 0 has it: nothing to say
		}
		return exitWith(o.conflictCode, fmt.Errorf("%s: lock %q not obtained%s: held elsewhere%s:\n%w", name, o.key, within, oneAttempt, detail))
	}
	// The library's errors begin with "redlock: ", which execute prints
	// once, before name.
	return exitWith(exitFailure, fmt.Errorf("%s: %s", name, strings.TrimPrefix(err.Error(), "redlock: ")))
}

// lostMessage is the line that tells a lock lost while name (run, hold)
// held it: fnErr is what fn returned, called whether it was called, cmdName
// run's command (empty for hold), cause the loss's cause if known (else run
// told it as it happened).
func lostMessage(name, key, cmdName string, called bool, fnErr error, cause string) string {
	msg := fmt.Sprintf("%s: the lock %q was lost", name, key)
	var ee *exitError
	switch {
	case errors.As(fnErr, &ee) && ee.err != nil:
		// Its own message begins with name too ("run: fork/exec ..."):
		// once is enough.
		msg += ": " + strings.TrimPrefix(ee.err.Error(), name+": ")
	case cmdName != "" && !called:
		// Found lost as Do was about to call fn.
		msg += fmt.Sprintf(" (%s did not run)", cmdName)
	case cmdName != "":
		// Also 0, which said nothing: a command that ended well
		// before the release found the lock gone ran, for all
		// anyone knows, without it.
		status := exitOK
		if errors.As(fnErr, &ee) {
			status = ee.code
		}
		msg += fmt.Sprintf(" (%s exited with status %d)", cmdName, status)
	}
	if cause != "" {
		msg += ": " + cause
	}
	return msg
}

// releaseFailedText says what became of a release that Unlock could not
// confirm (too many nodes failed), once the Client's repeats of it have
// ended: on how many nodes the key is gone. A node that answered that it no
// longer held the key released nothing then, but its key is gone all the
// same: an earlier send of the release that failed may have deleted it, or
// it was evicted, deleted or expired there; the line says "or no longer held
// it" when a node answered so, rather than call every answer a release.
func releaseFailedText(key string, events *lockEvents) string {
	released, answered, nodes := events.releasedNodes()
	gone := answered > released // some node answered that it no longer held it
	if nodes > 0 && answered == nodes {
		did := "released it"
		if gone {
			did = "released it or found it gone"
		}
		return fmt.Sprintf("releasing the lock %q failed at first, then its repeat %s on all %d %s", key, did, nodes, plural.Nodes(nodes))
	}
	did := "released it"
	if gone {
		did = "released it or no longer held it"
	}
	return fmt.Sprintf("releasing the lock %q failed (%d of %d %s %s, its repeat included); it expires by itself within its TTL on the others", key, answered, nodes, plural.Nodes(nodes), did)
}
