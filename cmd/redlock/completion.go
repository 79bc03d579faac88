package main

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// completionExamples are the examples of "redlock completion" and of each of
// its shells.
var completionExamples = map[string]string{
	"completion": `  source <(redlock completion bash)                          # this bash session
  redlock completion zsh > "${fpath[1]}/_redlock"            # zsh, every session
  redlock completion fish > ~/.config/fish/completions/redlock.fish`,
	"bash": `  source <(redlock completion bash)
  redlock completion bash > /etc/bash_completion.d/redlock`,
	"zsh": `  source <(redlock completion zsh)
  redlock completion zsh > "${fpath[1]}/_redlock"`,
	"fish": `  redlock completion fish | source
  redlock completion fish > ~/.config/fish/completions/redlock.fish`,
	"powershell": `  redlock completion powershell | Out-String | Invoke-Expression`,
}

// addCompletion adds cobra's "completion" command to root, with examples: it
// writes the completion script of bash, zsh, fish or powershell, which
// completes the subcommands and their flags. An unknown shell, or an
// argument after the shell, is a usage error (exit 2), as an unknown command
// is; without a shell it shows its help.
func addCompletion(root *cobra.Command) {
	noFilesForValues(root)
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() != "completion" {
			continue
		}
		c.Short = "Print the shell completion script: bash, zsh, fish or powershell"
		c.Example = completionExamples["completion"]
		c.Args = func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageErrorf("%s: unknown shell %q: give bash, zsh, fish or powershell (see %s --help)", subcommand(cmd), args[0], cmd.CommandPath())
			}
			return nil
		}
		c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
		for _, sh := range c.Commands() {
			sh.Example = completionExamples[sh.Name()]
			sh.Args = noArgs
		}
	}
}

// noFilesForValues makes the shells offer nothing for the value of every
// flag of cmd and its subcommands that takes a duration (--wait, --ttl,
// --grace, --node-timeout, --for, --timeout, ...), a number
// (--conflict-exit-code, ...) or a string that is not a file (--nodes,
// --prefix, --key, ...): they offered file names, as they do for a flag
// without a completion of its own. A flag with a completion of its own
// (--driver) keeps it, and a string flag named --*-file would keep the file
// names.
func noFilesForValues(cmd *cobra.Command) {
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		switch f.Value.Type() {
		case "duration", "int":
		case "string":
			if strings.HasSuffix(f.Name, "-file") {
				return // a file is meant
			}
		default:
			return
		}
		if _, ok := cmd.GetFlagCompletionFunc(f.Name); ok {
			return // its own completion, as --driver's
		}
		if err := cmd.RegisterFlagCompletionFunc(f.Name, cobra.NoFileCompletions); err != nil {
			panic(err) // a second completion of the flag
		}
	})
	for _, c := range cmd.Commands() {
		noFilesForValues(c)
	}
}
