// Package redisserver starts and controls real redis-server processes: the
// engine behind package redistest, kept free of package testing so that the
// redlock command's demo can start servers too.
//
// Every server listens on a loopback address only, 127.0.0.1 (or ::1 with
// WithIPv6), on a free port picked at start (never
// 6379), with its own temporary directory, no RDB snapshots and no AOF unless
// asked for. See package redistest for the documentation of each name; it
// re-exports them.
package redisserver
