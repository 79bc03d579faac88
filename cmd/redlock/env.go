package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// envPrefix starts the name of the environment variable of every flag.
const envPrefix = "REDLOCK_"

// envAnnotation marks the commands whose flags may come from the
// environment.
const envAnnotation = "redlock-env"

// noEnv marks a flag that withEnv leaves alone.
const noEnv = "redlock-noenv"

// envName is the environment variable of the flag name: REDLOCK_ and the
// name in capitals with "_" for "-" (--conflict-exit-code:
// REDLOCK_CONFLICT_EXIT_CODE).
func envName(flag string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// withEnv lets every flag of cmd (but --help and those marked noEnv) come from its environment
// variable, and says so in the flag's help. It returns cmd.
func withEnv(cmd *cobra.Command) *cobra.Command {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[envAnnotation] = "true"
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Name != "help" && f.Annotations[noEnv] == nil {
			f.Usage += " [$" + envName(f.Name) + "]"
		}
	})
	return cmd
}

// applyEnv sets every flag of cmd not given on the command line from its
// environment variable, when that is set and not empty, if cmd was made
// withEnv. A value the flag does not accept is a usage error that names the
// subcommand and the variable.
func applyEnv(cmd *cobra.Command) error {
	if cmd.Annotations[envAnnotation] == "" {
		return nil
	}
	var err error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Name == "help" || f.Annotations[noEnv] != nil || f.Changed {
			return
		}
		name := envName(f.Name)
		v, ok := os.LookupEnv(name)
		if !ok || v == "" {
			return
		}
		if serr := cmd.Flags().Set(f.Name, v); serr != nil {
			err = usageErrorf("%s: %s=%q: not a valid value for --%s: %v", subcommand(cmd), name, v, f.Name, cleanFlagError(serr))
			return
		}
		err = cmd.Flags().SetAnnotation(f.Name, envSet, []string{name})
	})
	return err
}

// envSet marks a flag that applyEnv set from its variable.
const envSet = "redlock-env-set"

// envWords are the words other than --NAME by which messages name a flag's
// value: the library's for the TTL and the node timeout, the addresses'.
var envWords = map[string][]string{
	"ttl":          {"TTL"},
	"node-timeout": {"node timeout"},
	"driver":       {"driver"},
	"nodes":        {"address", "addresses"},
}

// envSources returns the variables that set the flags of cmd that msg, a
// usage error's, names: a refused value the user gave in the environment,
// not on the command line.
func envSources(cmd *cobra.Command, msg string) []string {
	var vars []string
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		v := f.Annotations[envSet]
		if len(v) == 0 || strings.Contains(msg, v[0]) {
			return
		}
		for _, w := range append([]string{"--" + f.Name}, envWords[f.Name]...) {
			if strings.Contains(msg, w) {
				vars = append(vars, v[0])
				return
			}
		}
	})
	return vars
}

// cleanFlagError drops pflag's wording before the cause of a bad value
// ("invalid argument ... for ... flag: "), which the caller says better.
func cleanFlagError(err error) string {
	msg := err.Error()
	if _, cause, ok := strings.Cut(msg, " flag: "); ok {
		return cause
	}
	return msg
}

// envHelp is the paragraph of help about the environment.
func envHelp(names ...string) string {
	var lines []string
	for i := 0; i < len(names); i += 4 {
		var vars []string
		for _, n := range names[i:min(i+4, len(names))] {
			vars = append(vars, envName(n))
		}
		lines = append(lines, "  "+strings.Join(vars, ", "))
	}
	return fmt.Sprintf(`Environment: every flag may come from a variable instead,
%s, ...
named REDLOCK_ and the flag's name in capitals with _ for - (booleans take
true, false, 1 or 0). A flag on the command line wins; an empty variable is
unset; a value the flag does not accept is a usage error (exit 2).`, strings.Join(lines, ",\n"))
}
