//go:build linux

package redisserver

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// staleAge is how old a server directory must be before Start removes it as
// left behind: a younger one may be another process's, created but not yet
// locked.
const staleAge = time.Minute

// lockDir holds an exclusive lock (flock) on dir for as long as the returned
// file stays open. The kernel drops the lock when this process dies, however
// it dies (a test binary ended by go test -timeout runs no cleanup), so that
// a later Start can tell a directory left behind from one in use.
func lockDir(dir string) (*os.File, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// removeStaleDirs removes the server directories in the temporary directory
// that no process holds locked and that are older than staleAge.
func removeStaleDirs() {
	tmp := os.TempDir()
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), dirPrefix) {
			continue
		}
		if info, err := e.Info(); err != nil || time.Since(info.ModTime()) < staleAge {
			continue
		}
		dir := filepath.Join(tmp, e.Name())
		f, err := lockDir(dir)
		if err != nil {
			continue // in use, or not ours to remove
		}
		_ = os.RemoveAll(dir)
		f.Close()
	}
}
