package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
)

// untilFormat is RFC 3339 with milliseconds, the format of hold's "until".
const untilFormat = "2006-01-02T15:04:05.000Z07:00"

type holdOptions struct {
	lockFlags
	holdFor       time.Duration
	outliveParent bool
}

// holdLine is the line hold prints on stdout once it holds the lock.
type holdLine struct {
	Key string `json:"key"`
	// KeyQuoted is Key quoted, given only for a key that is not UTF-8
	// (see jsonKeyQuoted).
	KeyQuoted string `json:"key_quoted,omitempty"`
	Token     uint64 `json:"token"` // 0 without --fencing
	Until     string `json:"until"` // the validity at the grant, RFC 3339 with milliseconds
}

func holdCommand() *cobra.Command {
	var o holdOptions
	cmd := &cobra.Command{
		Use:   "hold [flags] KEY",
		Short: "Hold a lock until interrupted, for shell scripts",
		Long: `hold acquires the lock KEY on the nodes, prints one line of JSON on stdout
once it holds it,

  {"key":"KEY","token":7,"until":"2026-11-30T10:00:10.000Z"}

and keeps it, extended every TTL/3, until it gets SIGINT, SIGTERM, SIGHUP or SIGQUIT
(but SIGHUP or SIGINT ignored when hold starts, as under nohup, stays ignored,
and no other: a SIGQUIT that a shell ignores in a background job still stops it;
SIGUSR1 and SIGUSR2 are ignored), or --for has passed; then it releases the lock and exits with 0. (On Windows:
Ctrl-C or Ctrl-Break, or the console's close, logoff or shutdown.) It is the
lock around several steps of a shell script: start it in the background, wait
for its line, do the steps, and kill it (see the example). token is the
fencing token with --fencing, 0 without; until is the lock's validity at the
grant, in UTC, which hold moves forward while it holds it. A key that is not
UTF-8, which JSON cannot hold (its bad bytes are U+FFFD in "key"), is also
given quoted, as Go quotes it, in "key_quoted".

hold watches the process that started it (the script; with coproc, the
script when the coproc execs hold, as in the first example, not a subshell
that waits for it): when that process ends without stopping hold (killed
by SIGKILL, or an exit that skipped the EXIT trap), hold releases the lock
and exits, saying so on stderr, as it does on SIGTERM; if it was still
waiting for the lock, it stops waiting and exits with 1. On Linux it learns
of it at once (a pidfd of its parent), elsewhere on unix within a second
(it asks for its parent's PID); on Windows it does not watch. A parent that
ended before hold started is not seen, and a parent that is PID 1 (init,
systemd, a container's init) or none (hold is a container's first process)
is not watched. A wrapper that runs hold as its child and waits for it
(timeout, flock, sudo as it usually runs) is hold's parent: hold watches the
wrapper, which lives on when the script dies, not the script.
--outlive-parent keeps the lock held after its parent ends, for a hold
detached on purpose (nohup, setsid, "( redlock hold KEY & )"): stop it
yourself then, or bound it with --for.
An EXIT trap that kills hold, as in the first example, still releases the
lock before the script has exited rather than after, and on Windows too.

If the lock is lost meanwhile (an extension finds it gone from too many of
the nodes for a quorum, or too many refuse it with an error retrying cannot
fix, such as NOPERM for a user without +pexpire, which is not retried, or its validity
runs out because they could not be reached), hold exits with 76 at once, naming on stderr how it was lost and
each node whose last extension failed, with its error: whatever the script does under the lock must stop.
hold cannot stop it: unlike run, it does not know the script's steps, and a
step that runs when the lock is lost runs on without it. Check that hold
still runs before each step (kill -0 "$hold", as in the example), keep
each step well inside the TTL, and give the token (--fencing) to a resource
that can refuse a stale one; for one command that must be stopped when the
lock is lost, use run.
A signal while hold still waits for the lock ends the wait: it exits with
128 + the signal's number, with no line on stdout (on stderr, that the lock
was not held); SIGINT, SIGTERM and SIGHUP end it by the signal itself, which
shells show as 128+N, so that Ctrl-C stops a script that waits at hold
(as PID 1, a container's first process, it exits with 128+N).

Exit codes:
  0       held, then released after a signal, --for or the end of the
          process that started hold
  75      the lock is held elsewhere: not obtained within --wait
          (--conflict-exit-code replaces 75, by any code but 69
          and 76, which tell other outcomes below)
  69      too many nodes failed (errors, timeouts) for a quorum; not at
          release: a release that so many nodes failed that no quorum
          could confirm it, heard before any said it no longer held the
          lock, is told on stderr and hold exits with 0 (the lock expires
          by itself within its TTL on those nodes)
  76      the lock was lost while held, or on release no quorum of the
          nodes confirmed that they still held it (too many said they no
          longer did for a quorum, or some did and the others failed to
          answer)
  128+N   signal N ended the wait for the lock (SIGINT, SIGTERM and SIGHUP
          end hold by the signal, which shells show as 128+N)
  2       bad flags or arguments, no nodes, a bad address or option,
          or two addresses of one server (or of one cluster)
  1       any other error of redlock (such as nodes that refuse the
          user: a wrong password, a missing ACL permission); the process
          that started hold ended while it waited for the lock

` + envHelp("nodes", "ttl", "wait", "prefix", "for", "fencing", "conflict-exit-code", "verbose", "outlive-parent"),
		Example: `  # hold the lock across the steps of a script
  coproc HOLD { exec redlock hold --wait 1m deploy; }
  hold=$HOLD_PID                    # bash unsets HOLD_PID once hold exits
  trap 'kill "$hold" 2>/dev/null' EXIT    # released however the script ends
  read -r held <&"${HOLD[0]}" || exit 1   # {"key":"deploy","token":0,...}
  kill -0 "$hold" && ./step-1 &&          # each step only while hold runs
  kill -0 "$hold" && ./step-2
  kill "$hold" 2>/dev/null; wait "$hold"  # released; 76 if it was lost

  # the same with a fencing token, read with jq
  redlock hold --fencing --for 10m invoices > held.json & hold=$!
  until [ -s held.json ]; do kill -0 "$hold" 2>/dev/null || exit 1; sleep 0.1; done
  import-invoices --fence "$(jq .token held.json)"

  # hold it for five minutes, as a maintenance window
  redlock hold --for 5m maintenance`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("hold: give one key, as in: redlock hold KEY (got %d arguments)", len(args))
			}
			return nil
		},
		ValidArgsFunction: cobra.NoFileCompletions, // KEY is a name, not a file
		RunE: func(cmd *cobra.Command, args []string) error {
			o.key = args[0]
			if err := o.check(cmd, "hold"); err != nil {
				return err
			}
			if cmd.Flags().Changed("for") && o.holdFor <= 0 {
				return usageErrorf("hold: --for %v is not positive", o.holdFor)
			}
			return runHold(cmd.Context(), o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	o.add(cmd)
	cmd.Flags().DurationVar(&o.holdFor, "for", 0, "release the lock and exit after this long (default: until a signal)")
	cmd.Flags().BoolVar(&o.outliveParent, "outlive-parent", false, "keep the lock when the process that started hold ends (a hold detached on purpose: nohup, setsid, a double fork)")
	return withEnv(cmd)
}

// runHold is the hold command.
func runHold(ctx context.Context, o holdOptions, stdout, stderr io.Writer) error {
	o.watchParent = !o.outliveParent
	return withLock(ctx, "hold", &o.lockFlags, stderr, stopSignals, func(ctx context.Context, l heldLock) error {
		line, err := json.Marshal(holdLine{Key: o.key, KeyQuoted: jsonKeyQuoted(o.key), Token: l.token, Until: l.until.UTC().Format(untilFormat)})
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(stdout, "%s\n", escapeC1(line)); err != nil {
			return fmt.Errorf("writing the line on stdout: %w", err)
		}
		var over <-chan time.Time
		if o.holdFor > 0 {
			t := time.NewTimer(o.holdFor)
			defer t.Stop()
			over = t.C
		}
		select {
		case sig := <-l.sigs:
			if _, ok := sig.(parentEnded); ok {
				// Said without -v too: nobody stopped hold.
				fmt.Fprintf(stderr, "redlock: hold: %v: releasing %s (--outlive-parent keeps it)\n", sig, keyText(o.key))
			} else if o.verbose {
				fmt.Fprintf(stderr, "redlock: hold: %v: releasing %s\n", sig, keyText(o.key))
			}
		case <-over:
		case <-ctx.Done():
			// Lost: withLock tells.
		}
		return nil
	})
}
