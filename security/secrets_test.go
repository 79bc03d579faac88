package security_test

import (
	"context"
	"fmt"
	"log"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/internal/syncbuf"
	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// The passwords of the secrets test. Each is a secret: the right one, a wrong
// one given by mistake (often a real password of another system) and an ACL
// user's.
const (
	secretPassword = "pw-S3cret-never-shown"
	wrongPassword  = "wrong-S3cret-never-shown"
	userPassword   = "user-S3cret-never-shown"
)

// lockValue matches a lock value: rand.Text's 26 characters of base32.
var lockValue = regexp.MustCompile(`(?:^|[^A-Z2-7])([A-Z2-7]{26})(?:$|[^A-Z2-7])`)

// logs collects what go-redis and the standard logger print while the
// package's tests run (see TestMain), for the secrets test to search.
type logs struct{ syncbuf.Buffer }

// logged is where go-redis logs, for every test of the package.
var logged logs

func (l *logs) Printf(_ context.Context, format string, v ...any) {
	fmt.Fprintf(&l.Buffer, format+"\n", v...)
}

// texts gathers everything the library shows during a test, to be searched
// for secrets.
type texts struct {
	mu  sync.Mutex
	all []string
}

func (x *texts) add(s ...string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.all = append(x.all, s...)
}

// addErr adds every text of err (see errorTexts).
func (x *texts) addErr(err error) { x.add(errorTexts(err)...) }

// addValue adds what v prints with every verb.
func (x *texts) addValue(v any) {
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%d", "%x", "%q"} {
		x.add(fmt.Sprintf(verb, v))
	}
}

// noPanic runs f and fails the test if it panics, with a message that does not
// repeat the panic value, which could hold a secret; it adds that value to x.
func (x *texts) noPanic(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			x.add(fmt.Sprint(r))
			t.Errorf("%s panicked", what)
		}
	}()
	f()
}

// check fails the test for every text that shows a password or a lock value.
func (x *texts) check(t *testing.T, values []string) {
	t.Helper()
	x.mu.Lock()
	defer x.mu.Unlock()
	require.NotEmpty(t, x.all)
	for _, s := range x.all {
		for _, pw := range []string{secretPassword, wrongPassword, userPassword} {
			if strings.Contains(s, pw) {
				t.Errorf("shows a password: %s", excerpt(s, pw))
			}
		}
		for _, v := range values {
			if strings.Contains(s, v) {
				t.Errorf("shows a lock value: %s", excerpt(s, v))
			}
		}
		if m := lockValue.FindStringSubmatch(s); m != nil {
			t.Errorf("shows what looks like a lock value: %s", excerpt(s, m[1]))
		}
	}
}

// excerpt returns the part of s around secret, with secret masked.
func excerpt(s, secret string) string {
	i := strings.Index(s, secret)
	if i < 0 {
		return fmt.Sprintf("%.200q", s)
	}
	from, to := max(0, i-100), min(len(s), i+len(secret)+100)
	return fmt.Sprintf("%q", s[from:i]+"<SECRET>"+s[i+len(secret):to])
}

// Passwords and lock values never leak: wrong passwords, unknown users,
// unreachable and stalled nodes, malformed addresses, TLS failures and the
// failures of a held lock go through every driver, and every error (each
// error of its tree, with %v, %+v and %#v), every String and %v of clients,
// locks and nodes, and the logs are searched for the secrets.
func TestSecretsNeverLeak(t *testing.T) {
	stdLog := log.Writer()
	log.SetOutput(&logged)
	t.Cleanup(func() { log.SetOutput(stdLog) })
	defer func() {
		for _, pw := range []string{secretPassword, wrongPassword, userPassword} {
			require.NotContains(t, logged.String(), pw, "the logs show a password")
		}
		require.NotRegexp(t, lockValue, logged.String(), "the logs show what looks like a lock value")
	}()

	pwServers := redistest.NewServers(t, 3, redistest.WithPassword(secretPassword))
	for _, s := range pwServers {
		_, err := s.Do(t.Context(), "ACL", "SETUSER", aclUser, "on", ">"+userPassword, "~*", "&*", "+@all")
		require.NoError(t, err)
	}
	certs := redistest.NewCerts(t)
	tlsSrv := redistest.NewServers(t, 3, redistest.WithTLS(certs, redistest.ClientCertsRequired), redistest.WithPassword(secretPassword))
	otherCA := redistest.NewCerts(t).CAFile
	dead := redistest.DownAddrs(t, 3)
	paused := redistest.NewServers(t, 3, redistest.WithPassword(secretPassword))
	for _, s := range paused {
		require.NoError(t, s.Pause())
		t.Cleanup(func() { s.Resume() })
	}

	each := func(addrs []string, f func(i int, addr string) string) []string {
		out := make([]string, len(addrs))
		for i, a := range addrs {
			out[i] = f(i, a)
		}
		return out
	}
	scenarios := []struct {
		name  string
		addrs []string
	}{
		{"WrongPassword", each(redistest.Addrs(pwServers), func(_ int, a string) string { return "redis://:" + wrongPassword + "@" + a })},
		{"WrongUserPassword", each(redistest.Addrs(pwServers), func(_ int, a string) string { return "redis://" + aclUser + ":" + wrongPassword + "@" + a })},
		{"UnknownUser", each(redistest.Addrs(pwServers), func(_ int, a string) string { return "redis://nobody:" + userPassword + "@" + a + "/3" })},
		{"Unreachable", each(dead, func(_ int, a string) string { return "redis://" + aclUser + ":" + secretPassword + "@" + a })},
		{"Stalled", each(redistest.Addrs(paused), func(_ int, a string) string { return "redis://:" + secretPassword + "@" + a })},
		{"UnknownCA", each(urls(tlsSrv), func(_ int, u string) string {
			return withQuery(t, u, func(q url.Values) { q.Set("tls_ca_file", otherCA) })
		})},
		{"NoClientCertificate", each(urls(tlsSrv), func(_ int, u string) string {
			return withQuery(t, u, func(q url.Values) { q.Del("tls_cert_file"); q.Del("tls_key_file") })
		})},
	}
	for _, d := range drivers {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			var x texts
			defer func() { x.check(t, nil) }()
			for _, sc := range scenarios {
				start := time.Now()
				x.noPanic(t, sc.name, func() { failingScenario(t, &x, d.name, sc.addrs) })
				t.Logf("%s: %v", sc.name, time.Since(start))
			}
			// Open's errors: malformed addresses and unreadable TLS files.
			for _, addr := range []string{
				"redis://:" + secretPassword + "@127.0.0.1:99999",
				"redis://" + aclUser + ":" + secretPassword + "@[::1",
				"redis://:" + secretPassword + "@127.0.0.1:1/x",
				"http://:" + secretPassword + "@127.0.0.1:1",
				"rediss://:" + secretPassword + "@127.0.0.1:1?tls_ca_file=/nonexistent/ca.pem",
				"rediss://:" + secretPassword + "@127.0.0.1:1?tls_cert_file=/nonexistent/c.pem&tls_key_file=/nonexistent/k.pem",
				"rediss://:" + secretPassword + "@127.0.0.1:1?tls_bogus=1",
			} {
				x.noPanic(t, "Open", func() {
					c, err := redlock.Open(d.name, []string{addr})
					require.Error(t, err, "Open(%s)", addr)
					require.Nil(t, c)
					x.addErr(err)
					n, err := d.d.Open(addr)
					require.Error(t, err)
					require.Nil(t, n)
					x.addErr(err)
				})
			}
			x.noPanic(t, "HeldLock", func() { heldLockScenario(t, &x, d.d) })
		})
	}
}

// failingScenario runs every call of a Client over addrs, which all fail,
// and adds what they show to x.
func failingScenario(t *testing.T, x *texts, name string, addrs []string) {
	t.Helper()
	c, err := redlock.Open(name, addrs, redlock.WithTTL(time.Second), redlock.WithFencing())
	require.NoError(t, err)
	defer func() { x.addErr(c.Close()) }()
	x.addValue(c)
	ctx := t.Context()
	_, err = c.TryLock(ctx, "secret-key")
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	x.addErr(err)
	lctx, cancel := context.WithTimeout(ctx, 150*time.Millisecond)
	defer cancel()
	_, err = c.Lock(lctx, "secret-key")
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	x.addErr(err)
	dctx, dcancel := context.WithTimeout(ctx, 150*time.Millisecond)
	defer dcancel()
	x.addErr(c.Do(dctx, "secret-key", func(context.Context) error { return nil }))
}

// heldLockScenario holds a lock through recording nodes (which learn its
// value), then makes the nodes fail under it: its scripts refused on two of
// three nodes, then those two killed. Extend and Unlock fail; their errors,
// the Lock and the Client must not show the value or the password.
func heldLockScenario(t *testing.T, x *texts, d driver.Driver) {
	t.Helper()
	ctx := t.Context()
	servers := redistest.NewServers(t, 3, redistest.WithPassword(secretPassword))
	var values valueSet
	nodes := make([]driver.Node, len(servers))
	for i, s := range servers {
		n, err := d.Open(s.URL())
		require.NoError(t, err)
		x.addValue(n)
		nodes[i] = recorder{Node: n, values: &values}
	}
	// A generous node timeout: the nodes are fresh, and the first TryLock
	// waits for their connections, which a busy machine can delay past the
	// default 200ms.
	c, err := redlock.New(nodes, redlock.WithTTL(5*time.Second), redlock.WithNodeTimeout(time.Second), redlock.WithFencing())
	require.NoError(t, err)
	defer func() { x.addErr(c.Close()) }()

	l, err := c.TryLock(ctx, "secret-key")
	require.NoError(t, err)
	x.addValue(l)
	x.addValue(c)
	x.add(l.String(), c.String())
	x.addValue(struct {
		L *redlock.Lock
		C *redlock.Client
	}{l, c})
	require.NoError(t, l.Extend(ctx, 5*time.Second))

	// The scripts refused: NOPERM on the commands that carry the value.
	for _, s := range servers[:2] {
		_, err := s.Do(ctx, "ACL", "SETUSER", "default", "-evalsha", "-eval")
		require.NoError(t, err)
	}
	err = l.Extend(ctx, 5*time.Second)
	require.ErrorIs(t, err, redlock.ErrLockLost)
	require.ErrorContains(t, err, "NOPERM")
	x.addErr(err)
	_, err = c.TryLock(ctx, "secret-key")
	x.addErr(err)

	// The nodes gone.
	for _, s := range servers[:2] {
		require.NoError(t, s.Kill())
	}
	err = l.Extend(ctx, 5*time.Second)
	require.ErrorIs(t, err, redlock.ErrLockLost)
	x.addErr(err)
	err = l.Unlock(ctx)
	require.ErrorIs(t, err, redlock.ErrLockLost)
	x.addErr(err)
	x.addValue(l)

	vals := values.list()
	require.NotEmpty(t, vals, "the recorder saw no lock value")
	x.check(t, vals)
}
