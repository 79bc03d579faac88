//go:build !race

package goredis_test

import "github.com/go-redlock/redlock/conformance"

// clusterOptions are RunRedis's options for clusters: every cluster test,
// slot migrations included (see race_test.go for -race).
var clusterOptions = []conformance.RedisOption{conformance.WithCluster()}
