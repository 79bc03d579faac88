package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// version describes the build, from its build information: the module and
// its version, the VCS revision it was built from (with its time, and
// "modified" when the tree had uncommitted changes), and the Go release.
func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return fmt.Sprintf("unknown (no build information), %s %s/%s", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	}
	return formatVersion(info)
}

// formatVersion formats info as version does. The Go command stamps the VCS
// settings when it builds inside a Git checkout (not a linked worktree, whose
// .git is a file) and -buildvcs is not false.
func formatVersion(info *debug.BuildInfo) string {
	v := info.Main.Version
	if v == "" {
		v = "(unknown)"
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	parts := []string{strings.TrimSpace(info.Main.Path + " " + v)}
	if rev := settings["vcs.revision"]; rev != "" {
		r := "revision " + rev
		if t := settings["vcs.time"]; t != "" {
			r += " (" + t + ")"
		}
		if settings["vcs.modified"] == "true" {
			r += ", modified"
		}
		parts = append(parts, r)
	} else {
		parts = append(parts, "revision unknown")
	}
	parts = append(parts, fmt.Sprintf("%s %s/%s", info.GoVersion, runtime.GOOS, runtime.GOARCH))
	return strings.Join(parts, ", ")
}
