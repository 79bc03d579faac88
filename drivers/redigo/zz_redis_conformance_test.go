package redigo_test

import (
	"testing"

	"github.com/go-redlock/redlock/conformance"
	"github.com/go-redlock/redlock/drivers/redigo"
)

func TestRedisConformance(t *testing.T) { conformance.RunRedis(t, redigo.Driver{}) }
