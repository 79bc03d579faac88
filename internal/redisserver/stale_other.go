//go:build !linux

package redisserver

import "os"

// lockDir does nothing where directories left behind are not detected.
func lockDir(string) (*os.File, error) { return nil, nil }

// removeStaleDirs does nothing where directories left behind are not
// detected.
func removeStaleDirs() {}
