//go:build !unix

package redisaddr

import (
	"io"
	"os"
	"time"
)

// readFile reads the file at path until its end or limit bytes. Outside
// unix there is no FIFO whose open(2) blocks (a Windows named pipe without a
// server fails to open at once), so every file is read as os.Open reads it,
// and wait is not needed.
func readFile(path string, limit int, _ time.Duration) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, int64(limit)))
}
