package redlock

import "time"

// SetClock makes c measure elapsed time by now, for simulation with a fake clock.
func SetClock(c *Client, now func() time.Time) { c.now = now }
