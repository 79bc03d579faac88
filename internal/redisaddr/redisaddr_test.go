package redisaddr

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Addr
		str  string
	}{
		{"127.0.0.1:6380", Addr{Host: "127.0.0.1", Port: "6380"}, "127.0.0.1:6380"},
		{"localhost", Addr{Host: "localhost", Port: "6379"}, "localhost:6379"},
		{"[::1]:7000", Addr{Host: "::1", Port: "7000"}, "[::1]:7000"},
		{"redis://127.0.0.1:7000", Addr{Host: "127.0.0.1", Port: "7000"}, "127.0.0.1:7000"},
		{"redis://127.0.0.1", Addr{Host: "127.0.0.1", Port: "6379"}, "127.0.0.1:6379"},
		{"redis://:s3cret@h:1/2", Addr{Host: "h", Port: "1", Password: "s3cret", DB: 2}, "redis://:xxxxx@h:1/2"},
		{"redis://alice:s3cret@h:1", Addr{Host: "h", Port: "1", Username: "alice", Password: "s3cret"}, "redis://alice:xxxxx@h:1"},
		{"redis://alice@h:1/", Addr{Host: "h", Port: "1", Username: "alice"}, "redis://alice@h:1"},
		{"rediss://:s3cret@h:1", Addr{Host: "h", Port: "1", Password: "s3cret", TLS: true}, "rediss://:xxxxx@h:1"},
		{"rediss://h:1?tls_ca_file=/ca.pem&tls_server_name=redis.internal&tls_cert_file=c.pem&tls_key_file=k.pem",
			Addr{Host: "h", Port: "1", TLS: true, TLSCAFile: "/ca.pem", TLSServerName: "redis.internal", TLSCertFile: "c.pem", TLSKeyFile: "k.pem"},
			"rediss://h:1"},
	} {
		got, err := Parse(tc.in)
		if err != nil {
			t.Errorf("Parse(%q) error %v", tc.in, err)
			continue
		}
		if got != tc.want {
			t.Errorf("Parse(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
		if got.String() != tc.str {
			t.Errorf("Parse(%q).String() = %q, want %q", tc.in, got.String(), tc.str)
		}
	}
}

func TestParseErrorsHidePasswords(t *testing.T) {
	for _, in := range []string{
		"", "h:0", "h:70000", "h:port", ":6379", "::1", "redis://", "http://h:1",
		"redis://u:s3cret@h:1/x", "redis://u:s3cret@h:1?db=1", "redis://u:s3cret@h:99999",
		"redis://u:s3cret@[::1", "redis://u:s3cret@h:1/-1", "h 1",
		"redis://u:s3cret@h:1?tls_ca_file=x", "rediss://u:s3cret@h:1?tls_cert_file=c", "rediss://u:s3cret@h:1?nope=1",
		"rediss://u:s3cret@h:1?tls_ca_file=a&tls_ca_file=b", "rediss://u:s3cret@h:1#frag",
	} {
		_, err := Parse(in)
		if err == nil {
			t.Errorf("Parse(%q) succeeded, want an error", in)
			continue
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("Parse(%q) error %q contains the password", in, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"127.0.0.1:6379", "redis://u:p@h:1/2", "[::1]:1", "redis://u:p@[::1]:2/0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := Parse(s)
		if err != nil {
			return
		}
		if a.Password != "" && strings.Contains(a.String(), a.Password) && !strings.Contains("xxxxx", a.Password) {
			if !strings.Contains(a.Username, a.Password) && !strings.Contains(a.HostPort(), a.Password) {
				t.Errorf("String() %q reveals the password", a.String())
			}
		}
	})
}
