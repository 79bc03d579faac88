package goredis_test

import (
	"testing"

	"github.com/go-redlock/redlock/conformance"
	"github.com/go-redlock/redlock/drivers/goredis"
)

func TestRedisConformance(t *testing.T) { conformance.RunRedis(t, goredis.Driver{}) }
