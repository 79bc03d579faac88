package redlock

import (
	"testing"
	"unsafe"
)

// TestKeptSize checks that the keeper's entry for a lock held through Do
// fits the 160-byte size class: there is one per held lock, for as long as
// it is held (bench/RESULTS.md, Scale). Its flags share one word; with one
// of them after the list's pointers, it took 168 bytes, in the 176-byte
// class.
func TestKeptSize(t *testing.T) {
	if size := unsafe.Sizeof(kept{}); size > 160 {
		t.Errorf("unsafe.Sizeof(kept{}) = %d, want at most 160 (the size class below 176): one per lock held through Do", size)
	}
}
