package redisserver

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
)

// InstallHint explains how to make redis-server available to this package.
const InstallHint = "install redis-server (Debian/Ubuntu: apt-get install -y redis-server; macOS: brew install redis), " +
	"or put redis-server on PATH, or set REDISTEST_SERVER to the path of the binary"

// ServerEnv is the environment variable that names the redis-server binary to
// run, as a path or as a name looked up on PATH. When it is empty,
// "redis-server" is looked up on PATH.
const ServerEnv = "REDISTEST_SERVER"

// ErrNotInstalled is returned (wrapped; test with errors.Is) by [Start] when
// the redis-server binary cannot be found. The error that wraps it says where
// it was looked for: on PATH, or as ServerEnv names it.
var ErrNotInstalled = errors.New("redistest: redis-server not found: " + InstallHint)

// findServer returns the path of the redis-server binary to run.
func findServer() (string, error) {
	if name := os.Getenv(ServerEnv); name != "" {
		path, err := exec.LookPath(name)
		if err != nil {
			return "", fmt.Errorf("%w (%s=%q: %v)", ErrNotInstalled, ServerEnv, name, err)
		}
		return path, nil
	}
	path, err := exec.LookPath("redis-server")
	if err != nil {
		return "", fmt.Errorf("%w (%v)", ErrNotInstalled, err)
	}
	return path, nil
}
