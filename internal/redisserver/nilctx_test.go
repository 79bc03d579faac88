package redisserver

import (
	"context"
	"testing"
)

// A nil context is an error, never a panic, and Restart given one leaves the
// server running.
func TestNilContext(t *testing.T) {
	var nilCtx context.Context
	if _, err := Start(nilCtx); err == nil {
		t.Error("Start(nil): no error")
	}
	if _, err := StartN(nilCtx, 2); err == nil {
		t.Error("StartN(nil): no error")
	}
	if testing.Short() {
		t.Skip("starts redis-server")
	}
	s := NewServer(t)
	if _, err := s.Do(nilCtx, "PING"); err == nil {
		t.Error("Do(nil): no error")
	}
	if err := s.Restart(nilCtx); err == nil {
		t.Error("Restart(nil): no error")
	}
	if _, err := s.Do(t.Context(), "PING"); err != nil {
		t.Errorf("the server stopped: %v", err)
	}
}

// The cluster's calls given a nil context return an error too.
func TestClusterNilContext(t *testing.T) {
	var nilCtx context.Context
	if _, err := StartCluster(nilCtx, 1); err == nil {
		t.Error("StartCluster(nil): no error")
	}
	if testing.Short() {
		t.Skip("starts redis-server")
	}
	c := NewCluster(t, 1)
	if err := c.WaitHealthy(nilCtx); err == nil {
		t.Error("WaitHealthy(nil): no error")
	}
	if err := c.MigrateSlot(nilCtx, 0, c.Shards()[0]); err == nil {
		t.Error("MigrateSlot(nil): no error")
	}
	if _, err := c.StartMigration(nilCtx, 0, c.Shards()[0]); err == nil {
		t.Error("StartMigration(nil): no error")
	}
}
