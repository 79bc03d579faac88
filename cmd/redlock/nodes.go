package main

import (
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/go-redlock/redlock/internal/redisaddr"
	"github.com/go-redlock/redlock/redlock"
)

// nodesEnv is the environment variable that gives the nodes when --nodes is
// not set (see withEnv).
var nodesEnv = envName("nodes")

// clusterCommaNote follows redisaddr.ClusterSeedsHint in the errors that
// find one Redis Cluster given as two of --nodes (clusterSeedsHint, and
// the library's, which match redisaddr.ErrSameCluster): seeds written
// comma-separated are two nodes.
const clusterCommaNote = " (a ',' in --nodes separates nodes)"

// clusterSeedsHint ends the errors of status and doctor that find one
// Redis Cluster given as two of --nodes, as run and hold end the library's.
const clusterSeedsHint = redisaddr.ClusterSeedsHint + clusterCommaNote

// defaultDriver is the driver of run when --driver is not given.
const defaultDriver = "rueidis"

// nodeFlags are the flags that say which nodes to use.
type nodeFlags struct {
	nodes  string
	driver string
}

// addNodes adds --nodes to cmd.
func (f *nodeFlags) addNodes(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.nodes, "nodes", "",
		"comma-separated node addresses, host:port or redis[s]://[user:password@]host:port[/db], or a Redis Cluster as redis[s]://host:port?cluster=true&addr=host2:port2; a password here shows in ps(1): give it in the variable")
}

// addDriver adds --driver to cmd, whose value completes to the drivers
// (lockDrivers), not to file names.
func (f *nodeFlags) addDriver(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.driver, "driver", defaultDriver, "the driver that talks to the nodes: goredis, redigo, rueidis or valkeygo")
	err := cmd.RegisterFlagCompletionFunc("driver", func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		var names []cobra.Completion
		for _, name := range lockDrivers() {
			if strings.HasPrefix(name, toComplete) {
				names = append(names, name)
			}
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	})
	if err != nil {
		panic(err) // a second --driver on cmd
	}
}

// lockDrivers returns the registered drivers that run and hold accept,
// sorted: every one but memory, whose locks live inside one process.
func lockDrivers() []string {
	return slices.DeleteFunc(redlock.Drivers(), func(name string) bool { return name == "memory" })
}

// addrs returns the node addresses from --nodes (or REDLOCK_NODES, which
// applyEnv copied into it), or a usage error of the command name when
// neither names any.
func (f *nodeFlags) addrs(name string) ([]string, error) {
	addrs := splitList(f.nodes)
	if len(addrs) == 0 {
		// Where the empty list came from: told to set REDLOCK_NODES, a
		// user whose variable is set would not see why it went unread.
		env := os.Getenv(nodesEnv)
		switch {
		case f.nodes != "" && f.nodes == env:
			return nil, usageErrorf("%s: no nodes: %s=%q names none", name, nodesEnv, env)
		case f.nodes != "":
			return nil, usageErrorf("%s: no nodes: --nodes %q names none", name, f.nodes)
		case env != "":
			return nil, usageErrorf("%s: no nodes: --nodes is empty, and a flag on the command line wins over %s", name, nodesEnv)
		}
		return nil, usageErrorf("%s: no nodes: give --nodes host:port,... or set %s", name, nodesEnv)
	}
	if err := commaInUserinfo(name, addrs); err != nil {
		return nil, err
	}
	return addrs, nil
}

// commaInUserinfo returns a usage error of the command name when a comma of a URL's user name or
// password split the list: a URL without '@', or one that does not parse,
// before the first item with '@' that is not a URL. The pieces are no
// addresses, and the first would be printed with the password: whole
// without '@', or, when the password has an '@' of its own (and the URL
// does not parse: "redis://u:p@ss/x" of "p@ss/x,y"), all of it after that
// '@', up to which alone it is redacted. So too for
// credentials without a URL ("user:pass,word@host"): an item that is no
// address, among those without '@' right before an item with '@'.
func commaInUserinfo(name string, addrs []string) error {
	for i, a := range addrs {
		_, rest, ok := strings.Cut(a, "://")
		if !ok {
			continue
		}
		if strings.Contains(rest, "@") {
			if _, err := redisaddr.ParseNode(a); err == nil {
				continue // an address: a later item with '@' says its own error
			}
		}
		for j := i + 1; j < len(addrs) && !strings.Contains(addrs[j], "://"); j++ {
			if strings.Contains(addrs[j], "@") {
				return usageErrorf("%s: address %d: %q: a ',' in a URL's user name or password splits the list of nodes there: write it %%2C",
					name, i+1, redisaddr.Redact(strings.Join(addrs[i:j+1], ",")))
			}
		}
	}
	// The same without a scheme ("user:pass,word@host:port", refused
	// anyway: credentials need redis://): the pieces before the one with
	// '@' have none to redact up to, and one that is no address would be
	// printed whole. Pieces that parse are never printed: the error is
	// then that of the piece with '@', redacted.
	plain := func(a string) bool { return !strings.Contains(a, "://") && !strings.Contains(a, "@") }
	for j, a := range addrs {
		if plain(a) || strings.Contains(a, "://") {
			continue
		}
		first := -1
		for i := j - 1; i >= 0 && plain(addrs[i]); i-- {
			if _, err := redisaddr.ParseNode(addrs[i]); err != nil {
				first = i
			}
		}
		if first >= 0 {
			return usageErrorf("%s: address %d: %q: a user name and password need a URL, redis://user:password@host:port, and a ',' in them splits the list of nodes there: write it %%2C",
				name, first+1, redisaddr.Redact(strings.Join(addrs[first:j+1], ",")))
		}
	}
	return nil
}

// splitList splits a comma-separated list, dropping spaces around the items
// and empty items.
func splitList(s string) []string {
	var out []string
	for item := range strings.SplitSeq(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
