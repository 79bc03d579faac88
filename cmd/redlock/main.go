// Command redlock puts the Redlock algorithm in a shell.
//
//	redlock demo     five local nodes: contention through every driver, a hand-off,
//	                 a lost lock detected, fencing tokens rising, a report
//	redlock run      run a command while holding a lock, like flock(1) across machines
//	redlock doctor   check that a set of Redis nodes is fit for Redlock
//
// The nodes of run and doctor come from --nodes host:port,... or from the
// REDLOCK_NODES environment variable. See "redlock help run" for the exit
// codes of run.
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
	os.Exit(execute(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// execute runs the command line args and returns the process's exit code.
func execute(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := rootCommand()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	code := exitFailure
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
		err = ee.err
	}
	if err != nil {
		msg := err.Error()
		if !strings.HasPrefix(msg, "redlock: ") { // the library's errors say it already
			msg = "redlock: " + msg
		}
		fmt.Fprintln(stderr, msg)
	}
	return code
}

func rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "redlock",
		Short: "Distributed locks on independent Redis masters (Redlock)",
		Long: `redlock puts the Redlock algorithm in a shell: a lock around any command
(run), a check of the nodes (doctor), and a tour on local nodes (demo).

The nodes of run and doctor are independent Redis masters, given with
--nodes host:port,... or the REDLOCK_NODES environment variable. An address is
host:port or redis://[user:password@]host:port[/db]; a missing port means 6379.`,
		Example: `  redlock demo
  redlock doctor --nodes 10.0.0.1:6379,10.0.0.2:6379,10.0.0.3:6379
  export REDLOCK_NODES=10.0.0.1:6379,10.0.0.2:6379,10.0.0.3:6379
  redlock run --key nightly-report -- ./build-report.sh`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageErrorf("unknown command %q: see redlock --help", args[0])
			}
			return cmd.Help()
		},
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return usageErrorf("%v (see %s --help)", err, cmd.CommandPath())
	})
	root.AddCommand(demoCommand(), runCommand(), doctorCommand())
	return root
}

// quietLogger discards go-redis's internal log.
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}
