package driver

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

// crcReference is CRC-16/XMODEM a bit at a time, as the specification
// writes it: what crc16's table must agree with.
func crcReference(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

func TestCRC16(t *testing.T) {
	// The check value of CRC-16/XMODEM, and Redis Cluster's own example.
	if got := crc16("123456789"); got != 0x31C3 {
		t.Errorf("crc16(123456789) = %#x, want 0x31c3", got)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		b := make([]byte, rng.IntN(64))
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		if got, want := crc16(string(b)), crcReference(string(b)); got != want {
			t.Fatalf("crc16(%q) = %#x, want %#x", b, got, want)
		}
	}
	for b := range 256 {
		if got, want := crc16(string([]byte{byte(b)})), crcReference(string([]byte{byte(b)})); got != want {
			t.Errorf("crc16(%#x) = %#x, want %#x", b, got, want)
		}
	}
}

func BenchmarkCRC16(b *testing.B) {
	for _, key := range []string{"bench:lone:ABCDEFGH:0", "lock:tenant-42:invoice-20261205-000123"} {
		b.Run("table/len="+strconv.Itoa(len(key)), func(b *testing.B) {
			for b.Loop() {
				crcSink = crc16(key)
			}
		})
		b.Run("bits/len="+strconv.Itoa(len(key)), func(b *testing.B) {
			for b.Loop() {
				crcSink = crcReference(key)
			}
		})
	}
}

var crcSink uint16
