package redlock

import (
	"testing"
	"unsafe"
)

// TestKeptSize checks that the keeper's entry for a lock held through Do
// fits the 160-byte size class: there is one per held lock, for as long as
// it is held (bench/RESULTS.md, Scale). Its flags share one word; with one
// of them after the list's pointers, it took 168 bytes, in the 176-byte
// class. Its heap index is an int32, so that it shares a word with the
// lock's own order of extension start and removal (kept.state).
func TestKeptSize(t *testing.T) {
	if size := unsafe.Sizeof(kept{}); size > 160 {
		t.Errorf("unsafe.Sizeof(kept{}) = %d, want at most 160 (the size class below 176): one per lock held through Do", size)
	}
}

// TestRoundSize checks that a round fits the 512-byte size class: two per
// lock+unlock, allocated and zeroed each time (bench/RESULTS.md,
// the lone call). An object above 512 bytes also takes a malloc header, and
// the next class is 576; with its two contexts as interfaces and its flags
// apart, a round took 544 bytes.
func TestRoundSize(t *testing.T) {
	if size := unsafe.Sizeof(round{}); size > 512 {
		t.Errorf("unsafe.Sizeof(round{}) = %d, want at most 512 (the size class without a malloc header)", size)
	}
}
