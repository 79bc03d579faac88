package batch_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/internal/batch"
)

func TestCmdParse(t *testing.T) {
	const secret = "lock-value-secret"
	for _, tc := range []struct {
		op    batch.Op
		reply any
		want  batch.Result
		err   bool
	}{
		{batch.SetNX, "OK", batch.Result{OK: true}, false},
		{batch.SetNX, []byte("OK"), batch.Result{OK: true}, false},
		{batch.SetNX, nil, batch.Result{}, false},
		{batch.SetNX, int64(1), batch.Result{}, true},
		{batch.Release, int64(1), batch.Result{OK: true}, false},
		{batch.ReleaseNotify, int64(0), batch.Result{}, false},
		{batch.Extend, int64(2), batch.Result{}, true},
		{batch.RaiseFence, "1", batch.Result{}, true},
		{batch.SetNXFence, []any{int64(1), "41"}, batch.Result{OK: true, Counter: 41}, false},
		{batch.SetNXFence, []any{int64(0), []byte("18446744073709551615")}, batch.Result{Counter: 1<<64 - 1}, false},
		{batch.SetNXFence, []any{int64(1)}, batch.Result{}, true},
		{batch.SetNXFence, []any{int64(3), "1"}, batch.Result{}, true},
		{batch.SetNXFence, []any{int64(1), "-1"}, batch.Result{}, true},
		{batch.SetNXFence, []any{int64(1), secret}, batch.Result{}, true},
		{batch.SetNXFence, []any{int64(1), int64(4)}, batch.Result{}, true},
	} {
		cmd := batch.Cmd{Op: tc.op, Key: "k", Value: secret}
		got, err := cmd.Parse(tc.reply)
		if tc.err {
			require.Error(t, err, "%v %#v", tc.op, tc.reply)
			require.NotContains(t, err.Error(), secret, "an error never shows a lock value")
			continue
		}
		require.NoError(t, err, "%v %#v", tc.op, tc.reply)
		require.Equal(t, tc.want, got, "%v %#v", tc.op, tc.reply)
	}
}

func TestCmdEncoding(t *testing.T) {
	ttl := 1500*time.Millisecond + 1 // rounds up
	for _, tc := range []struct {
		cmd    batch.Cmd
		script *driver.Script
		keys   []string
		args   []any
		name   string
	}{
		{batch.Cmd{Op: batch.SetNX, Key: "k", Value: "v", TTL: ttl}, nil, []string{"k"}, []any{"v", "NX", "PX", "1501"}, "SET NX"},
		{batch.Cmd{Op: batch.SetNXFence, Key: "k", Value: "v", TTL: ttl, FenceKey: "f"}, &driver.SetNXFenceScript, []string{"k", "f"}, []any{"v", "1501"}, "SET NX fence"},
		{batch.Cmd{Op: batch.Release, Key: "k", Value: "v"}, &driver.ReleaseScript, []string{"k"}, []any{"v"}, "release"},
		{batch.Cmd{Op: batch.ReleaseNotify, Key: "k", Value: "v"}, &driver.ReleaseNotifyScript, []string{"k"}, []any{"v"}, "release"},
		{batch.Cmd{Op: batch.Extend, Key: "k", Value: "v", TTL: ttl}, &driver.ExtendScript, []string{"k"}, []any{"v", "1501"}, "extend"},
		{batch.Cmd{Op: batch.RaiseFence, Key: "k", Value: "v", FenceKey: "f", Token: 9}, &driver.RaiseFenceScript, []string{"k", "f"}, []any{"v", "9"}, "raise fence"},
	} {
		require.Equal(t, tc.script, tc.cmd.Script(), tc.name)
		require.Equal(t, tc.keys, tc.cmd.Keys(), tc.name)
		require.Equal(t, tc.args, tc.cmd.Args(), tc.name)
		require.Equal(t, tc.name, tc.cmd.Op.String())
	}
	require.Equal(t, "op 99", batch.Op(99).String())
}
