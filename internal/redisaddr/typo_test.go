package redisaddr

import (
	"strings"
	"testing"
)

// Common typos get an error that says what to write, and host names that
// begin like a scheme still parse.
func TestSchemeTypos(t *testing.T) {
	for in, want := range map[string]string{
		"redis:/10.0.0.1:7000": "want redis://host:port",
		"redis:10.0.0.1:7000":  "want redis://host:port",
		"rediss//host:7000":    "want rediss://host:port",
		"REDIS:/host:1":        "want redis://host:port",
		"/var/run/redis.sock":  "Unix sockets are not supported",
		"unix:/tmp/redis.sock": "Unix sockets are not supported",
	} {
		_, err := ParseNode(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseNode(%q) = %v, want an error saying %q", in, err, want)
		}
	}
	for _, in := range []string{"redis:6379", "redis", "redis-1:6379", "rediscache:7000", "redis.example.com:6379"} {
		if _, err := ParseNode(in); err != nil {
			t.Errorf("ParseNode(%q): %v", in, err)
		}
	}
}
