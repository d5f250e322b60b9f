package render

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"time"
)

// floatBytes and floatDuration are appendBytes and appendDuration as they
// were, with strconv's float formatting: the reference of the integer
// versions.
func floatBytes(n uint64) string {
	unit := func(v float64, u string) string { return strconv.FormatFloat(v, 'f', 1, 64) + u }
	switch {
	case n >= 1<<30:
		return unit(float64(n)/(1<<30), " GiB")
	case n >= 1<<20:
		return unit(float64(n)/(1<<20), " MiB")
	case n >= 1<<10:
		return unit(float64(n)/(1<<10), " KiB")
	}
	return strconv.FormatUint(n, 10) + " B"
}

func floatDuration(ns uint64) string {
	d := time.Duration(ns)
	switch {
	case d >= time.Second:
		return strconv.FormatFloat(d.Seconds(), 'f', 2, 64) + " s"
	case d >= time.Millisecond:
		return strconv.FormatFloat(float64(d)/1e6, 'f', 2, 64) + " ms"
	}
	return strconv.FormatFloat(float64(d)/1e3, 'f', 1, 64) + " µs"
}

// near returns values around every multiple of step (a rounding boundary
// or a halfway point) up to limit, and random ones below limit.
func near(step, limit uint64, rng *rand.Rand) []uint64 {
	var out []uint64
	for k := uint64(0); k*step < limit && k < 5000; k++ {
		for d := uint64(0); d < 3; d++ {
			out = append(out, k*step+d, k*step-d)
		}
	}
	for range 200000 {
		out = append(out, rng.Uint64N(limit))
	}
	return out
}

// TestAppendBytesExact: byte counts print as strconv's float formatting did,
// digit for digit (the stories and goldens stay unchanged).
func TestAppendBytesExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	vals := near(1<<10/20, 1<<22, rng) // halfway points of KiB: 51.2 B apart
	vals = append(vals, near(1<<20/20, 1<<32, rng)...)
	vals = append(vals, near(1<<30/20, 1<<45, rng)...)
	vals = append(vals, 1<<53-1, 1<<53, 1<<53+1, 1<<63, 1<<64-1)
	for _, n := range vals {
		if got, want := string(appendBytes(nil, n)), floatBytes(n); got != want {
			t.Fatalf("appendBytes(%d) = %q, strconv: %q", n, got, want)
		}
	}
}

// TestAppendDurationExact: durations print as strconv's float formatting
// did, halfway cases included.
func TestAppendDurationExact(t *testing.T) {
	for ns := uint64(0); ns < 3_000_000; ns++ { // every µs and ms value up to 3 ms
		if got, want := string(appendDuration(nil, ns)), floatDuration(ns); got != want {
			t.Fatalf("appendDuration(%d) = %q, strconv: %q", ns, got, want)
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	vals := near(5_000, 1_000_000_000, rng)            // ms: halfway every 5 µs
	vals = append(vals, near(5_000_000, 1e13, rng)...) // s: halfway every 5 ms
	vals = append(vals, near(5_000_000, 2e15, rng)...)
	vals = append(vals, exactBelow-1, exactBelow, exactBelow+5e6, 1<<63, 1<<64-1)
	for _, ns := range vals {
		if got, want := string(appendDuration(nil, ns)), floatDuration(ns); got != want {
			t.Fatalf("appendDuration(%d) = %q, strconv: %q", ns, got, want)
		}
	}
}

// TestNeedsQuoteBytes: the byte loop answers as the rune loop did, invalid
// UTF-8 and C1 controls (not quoted) included.
func TestNeedsQuoteBytes(t *testing.T) {
	runes := func(s string) bool {
		for _, r := range s {
			if r < 0x20 || r == 0x7f {
				return true
			}
		}
		return false
	}
	for _, s := range []string{"", "plain", "tab\there", "del\x7f", "é\u0085x", "\xff\xfe", "日本\n", "\xc3", "a\x00b"} {
		if got, want := needsQuote(s), runes(s); got != want {
			t.Errorf("needsQuote(%q) = %v, the rune loop: %v", s, got, want)
		}
	}
}

// TestAppendUint: the digits strconv.AppendUint appends.
func TestAppendUint(t *testing.T) {
	vals := []uint64{0, 1, 9, 10, 99, 100, 1<<64 - 1, 1 << 63}
	for p := uint64(1); p < 1e19; p *= 10 {
		vals = append(vals, p-1, p, p+1)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 100000 {
		vals = append(vals, rng.Uint64()>>rng.UintN(64))
	}
	for _, v := range vals {
		if got, want := string(appendUint([]byte("x"), v)), string(strconv.AppendUint([]byte("x"), v, 10)); got != want {
			t.Fatalf("appendUint(%d) = %q, want %q", v, got, want)
		}
	}
}
