// Command redlock puts the Redlock algorithm in a shell.
//
//	redlock demo    five local nodes, contenders through every driver, a report
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	root := &cobra.Command{
		Use:           "redlock",
		Short:         "Distributed locks on independent Redis masters (Redlock)",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(demoCommand())
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "redlock:", err)
		os.Exit(1)
	}
}
