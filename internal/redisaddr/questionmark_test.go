package redisaddr

import (
	"strings"
	"testing"
)

// A password with a '?' in it, not percent-encoded, ends the URL's
// authority there: url.Parse reads what follows as the query, up to and past
// the '@'. When what comes before the '?' still makes a host (a password of
// digits, or a user information without ':', which redigo and redis-cli
// take for a password), the address parses as a URL whose query's first
// parameter is named by the rest of the password. Neither ParseNode's error
// nor MaskName may show it.
var questionMarkPasswords = []struct{ addr, secret string }{
	{"redis://:12345?678s3cret@host:6379", "678s3cret"},
	{"redis://u:12?s3cretpart@h:1", "s3cretpart"},
	{"redis://u:12?s3cretpart@h:1/2", "s3cretpart"},
	{"redis://s3cret?morepart@h:1", "morepart"},
	{"redis://u:12?p4rt=s3cretpart@h:1", "p4rt"},
	{"rediss://u:12?p4rt=s3cretpart@h:1?tls_server_name=x", "p4rt"},
	{"redis://u:12?cluster=true&p4rt@h:1", "p4rt"},
}

func TestParseErrorHidesPasswordAfterQuestionMark(t *testing.T) {
	for _, tc := range questionMarkPasswords {
		_, err := ParseNode(tc.addr)
		if err == nil {
			t.Errorf("ParseNode(%q) succeeded, want an error", tc.addr)
			continue
		}
		if strings.Contains(err.Error(), tc.secret) {
			t.Errorf("ParseNode(%q) error %q shows the password's %q", tc.addr, err, tc.secret)
		}
		if !strings.Contains(err.Error(), "percent-encode") {
			t.Errorf("ParseNode(%q) error %q does not say to percent-encode the password", tc.addr, err)
		}
	}
}

// MaskName hides so the end of a password whose '/' or '#' ended the host:
// url.Parse reads it as the path or the fragment (ParseNode refuses both
// without naming them).
func TestMaskNamePasswordAfterQuestionMark(t *testing.T) {
	for _, tc := range append(questionMarkPasswords, []struct{ addr, secret string }{
		{"redis://u:12/s3cretpart@h:1", "s3cretpart"},
		{"redis://s3cret/morepart@h:1", "morepart"},
		{"redis://u:12#s3cretpart@h:1", "s3cretpart"},
		{"redis://u:12/p4rt?tls_ca_file=s3cretpart@h:1", "p4rt"},
	}...) {
		if got := MaskName(tc.addr); strings.Contains(got, tc.secret) {
			t.Errorf("MaskName(%q) = %q, which shows the password's %q", tc.addr, got, tc.secret)
		}
	}
}
