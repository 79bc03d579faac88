package main

import "github.com/spf13/cobra"

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
// completes the subcommands and their flags.
func addCompletion(root *cobra.Command) {
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() != "completion" {
			continue
		}
		c.Short = "Print the shell completion script: bash, zsh, fish or powershell"
		c.Example = completionExamples["completion"]
		for _, sh := range c.Commands() {
			sh.Example = completionExamples[sh.Name()]
		}
	}
}
