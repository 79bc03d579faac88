// Command redlock puts the Redlock algorithm in a shell.
//
//	redlock run KEY -- CMD   run a command while holding a lock, like flock(1) across machines
//	redlock hold KEY         hold a lock until interrupted, for shell scripts
//	redlock status KEY...    who holds a lock on every node: TTL and fencing counter
//	redlock doctor           check that a set of Redis nodes is fit for Redlock
//	redlock demo             local nodes (five, or --nodes N): contention through every
//	                         driver, a hand-off, a lost lock detected, fencing tokens
//	                         rising, a report
//	redlock completion SHELL shell completion for bash, zsh, fish or powershell
//
// The nodes of run, hold, status and doctor come from --nodes host:port,...
// or from the REDLOCK_NODES environment variable; every other flag of theirs
// has its variable too (REDLOCK_TTL, REDLOCK_WAIT, REDLOCK_PREFIX, ...). See
// "redlock help run" for the exit codes.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"
)

func main() {
	// go-redis logs dial failures and pool events to stderr from inside the
	// goredis driver and doctor; the command reports errors itself.
	redis.SetLogger(quietLogger{})
	catchSIGPIPE()
	code, sig := execute(context.Background(), os.Args[1:], os.Stdout, os.Stderr)
	if sig != nil {
		dieBySignal(sig) // returns if sig cannot end the process
	}
	os.Exit(code)
}

// execute runs the command line args and returns the process's exit code,
// and the signal that should end it instead when not nil (see
// exitError.signal).
func execute(ctx context.Context, args []string, stdout, stderr io.Writer) (int, os.Signal) {
	// Every message goes out with its terminal controls escaped: they
	// carry the servers' text (see messageWriter).
	stderr = messageWriter{stderr}
	root := rootCommand()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	var (
		cmd *cobra.Command
		err error
	)
	if where, ok := movedCommand(args); ok {
		// Before cobra, which would refuse the tool's own flags first.
		err = usageErrorf("unknown command %q: the developers' %s is not part of the user's command; from a checkout of the repository: %s", args[0], args[0], where)
	} else {
		cmd, err = root.ExecuteContextC(ctx)
	}
	if err == nil {
		return exitOK, nil
	}
	code := exitFailure
	var sig os.Signal
	var ee *exitError
	if errors.As(err, &ee) {
		code, sig = ee.code, ee.signal
		err = ee.err
	}
	if err != nil {
		msg := err.Error()
		if !strings.HasPrefix(msg, "redlock: ") { // the library's errors say it already
			msg = "redlock: " + msg
		}
		if code == exitUsage && cmd != nil {
			if vars := envSources(cmd, msg); len(vars) > 0 {
				msg += " (from the environment: " + strings.Join(vars, ", ") + ")"
			}
		}
		fmt.Fprintln(stderr, msg)
	}
	return code, sig
}

func rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "redlock",
		Short: "Distributed locks on independent Redis masters (Redlock)",
		Long: `redlock puts the Redlock algorithm in a shell: a lock around any command
(run), a lock held across the steps of a script (hold), who holds a lock
(status), a check of the nodes (doctor), and a tour on local nodes (demo).

The nodes are independent Redis masters, given with --nodes host:port,... or
the REDLOCK_NODES environment variable. An address is host:port,
redis://[user:password@]host:port[/db] or rediss://... for TLS; a missing port
means 6379. A password on the command line shows in ps(1) to every user of
the machine: give an address with one in REDLOCK_NODES, whose value only its
user and root can read (run passes it on to CMD with the rest of the
environment: start CMD with env -u REDLOCK_NODES to keep it from CMD).
Every flag of run, hold, status and doctor may come from the
environment: REDLOCK_ and the flag's name in capitals, with _ for -
(REDLOCK_TTL, REDLOCK_WAIT, REDLOCK_PREFIX, REDLOCK_CONFLICT_EXIT_CODE, ...);
a flag on the command line wins.

Exit codes of run and hold: 75 when the lock is held elsewhere
(--conflict-exit-code), 69 when too many nodes failed for a quorum, 76 when
the lock was lost, 2 for bad flags or arguments; run also exits with its
command's status. Shell completion: redlock completion bash|zsh|fish.`,
		Example: `  redlock demo
  redlock doctor --nodes 10.0.0.1:6379,10.0.0.2:6379,10.0.0.3:6379
  export REDLOCK_NODES=10.0.0.1:6379,10.0.0.2:6379,10.0.0.3:6379
  redlock run nightly-report -- ./build-report.sh
  redlock status nightly-report
  source <(redlock completion bash)`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if v, _ := cmd.Flags().GetBool("version"); v {
				// Printed here rather than through cobra's Version, whose
				// custom template would link text/template, and with it
				// every method of the Redis clients (its reflection keeps
				// them): a binary four times larger.
				if len(args) > 0 {
					return usageErrorf("--version takes no arguments, got %q: see redlock --help", args[0])
				}
				fmt.Fprintln(cmd.OutOrStdout(), "redlock "+version())
				return nil
			}
			if len(args) > 0 {
				return usageErrorf("unknown command %q: see redlock --help", args[0])
			}
			return cmd.Help()
		},
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return applyEnv(cmd)
		},
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	// --version without the shorthand -v, which is --verbose in run and hold.
	root.Flags().Bool("version", false, "print the module's version, the VCS revision it was built from, and the Go release")
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		if cmd != root {
			return usageErrorf("%s: %v (see %s --help)", subcommand(cmd), err, cmd.CommandPath())
		}
		return usageErrorf("%v (see %s --help)", err, cmd.CommandPath())
	})
	root.AddCommand(runCommand(), holdCommand(), statusCommand(), doctorCommand(), demoCommand())
	root.SetHelpCommand(helpCommand(root))
	addCompletion(root)
	return root
}

// helpCommand is "redlock help [command]": cobra's own shows the root's help,
// with exit 0, for a topic it does not know, since the root takes arguments;
// this one fails with 2 then, as "redlock nosuch" does.
func helpCommand(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		Long:  "Help provides help for any command of redlock: redlock help [command].",
		ValidArgsFunction: func(_ *cobra.Command, _ []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
			var names []cobra.Completion
			for _, c := range root.Commands() {
				if c.IsAvailableCommand() {
					names = append(names, c.Name())
				}
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(_ *cobra.Command, args []string) error {
			// Find returns the deepest command args name and the
			// arguments after it, which a help topic does not have:
			// "help run extra" is no topic, as "help nosuch" is not.
			c, rest, err := root.Find(args)
			if err != nil || (c == root && len(args) > 0) || len(rest) > 0 {
				return usageErrorf("unknown help topic %q: see redlock --help", strings.Join(args, " "))
			}
			return c.Help()
		},
	}
}

// subcommand returns cmd's path without the root's name ("status",
// "completion bash"), which begins its error messages, after the
// "redlock: " that execute prints.
func subcommand(cmd *cobra.Command) string {
	_, sub, _ := strings.Cut(cmd.CommandPath(), " ")
	return sub
}

// quietLogger discards go-redis's internal log.
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// movedCommands are the developers' tools that earlier versions of the
// command held, and where they are now: the tooling modules of the
// repository, which users of the library and the command never download.
var movedCommands = map[string]string{
	"bench": "cd bench && go run ./cmd/benchrun",
	"chaos": "cd safety && go run ./cmd/chaos -duration D",
}

// movedCommand returns where the tool named by args' first word is now, if
// it is one of movedCommands.
func movedCommand(args []string) (string, bool) {
	if len(args) == 0 {
		return "", false
	}
	where, ok := movedCommands[args[0]]
	return where, ok
}
