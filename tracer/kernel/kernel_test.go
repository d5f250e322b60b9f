package kernel

import (
	"testing"
)

// Request flags on 6.18: op in the low 8 bits, RAHEAD bit 19, SYNC bit 11.
const (
	flRead   = 0
	flWrite  = 1
	flRahead = 1 << 19
	flSync   = 1 << 11
)

func TestRwbs(t *testing.T) {
	k := Linux618()
	for flags, want := range map[uint32]string{
		flRead | flRahead:        "RA",
		flWrite | flSync:         "WS",
		flWrite | 1<<18 | 1<<17:  "FWF",
		flRead | flSync | 1<<12:  "RSM",
		2:                        "F",
		3:                        "D",
		flWrite | flSync | 1<<12: "WSM",
	} {
		if got := k.Rwbs(flags); got != want {
			t.Errorf("Rwbs(%#x) = %q, want %q", flags, got, want)
		}
	}
}

func TestDevEncoding(t *testing.T) {
	if Dev(254<<20|3) != "254:3" {
		t.Error(Dev(254<<20 | 3))
	}
	// glibc dev_t for 254:3 is 0xfe03.
	if UserDev(0xfe03) != 254<<20|3 {
		t.Errorf("UserDev = %#x", UserDev(0xfe03))
	}
}
