package redlock_test

import (
	"testing"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// BenchmarkNotifyCost measures what release notifications cost on the
// uncontended path: lock+unlock on five real servers through each Redis
// driver, with the nodes as they are (Unlock runs the release script that also
// publishes) and with their optional interfaces hidden (the plain release
// script). Compare the two in one run:
//
//	go test -run '^$' -bench NotifyCost -count 5 ./redlock/
func BenchmarkNotifyCost(b *testing.B) {
	servers := redistest.NewServers(b, 5)
	for _, name := range redisDrivers {
		for _, mode := range []string{"notify", "plain"} {
			b.Run(name+"/"+mode, func(b *testing.B) {
				d := driverByName(b, name)
				nodes := make([]driver.Node, len(servers))
				for i, s := range servers {
					n, err := d.Open(s.Addr())
					if err != nil {
						b.Fatal(err)
					}
					nodes[i] = n
					if mode == "plain" {
						nodes[i] = opaque{n}
					}
				}
				c, err := redlock.New(nodes)
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				lockUnlockParallel(b, c)
			})
		}
	}
}
