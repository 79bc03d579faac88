package redlock

import "time"

// SetClock makes c measure elapsed time by now, for simulation with a fake clock.
func SetClock(c *Client, now func() time.Time) { c.now = now }

// CallOptions reads the settings of a call of Do with opts, for a test of
// its cost.
func CallOptions(c *Client, opts ...Option) error {
	_, err := c.callOptions("Do", doOptions, opts)
	return err
}
