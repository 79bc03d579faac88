package rueidis_test

import (
	"testing"

	"github.com/go-redlock/redlock/conformance"
	"github.com/go-redlock/redlock/drivers/rueidis"
)

func TestRedisConformance(t *testing.T) { conformance.RunRedis(t, rueidis.Driver{}) }
