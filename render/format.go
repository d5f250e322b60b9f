package render

import (
	"strconv"
	"time"

	"github.com/iopath/iopath/record"
)

// Safe quotes a name with control characters (a newline or escape sequence
// in a file name must not break the output).
func Safe(s string) string {
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return strconv.Quote(s)
		}
	}
	return s
}

// Bytes, Duration, Count and Ranges format with strconv rather than fmt:
// the default mode prints one story per missed call, at up to tens of
// thousands per second (same output as the fmt verbs they replace).

// Bytes renders a byte count the way people read it (KiB = 1024 B, one
// decimal): "512 B", "16.0 KiB".
func Bytes(b uint64) string {
	unit := func(v float64, u string) string { return strconv.FormatFloat(v, 'f', 1, 64) + u }
	switch {
	case b >= 1<<30:
		return unit(float64(b)/(1<<30), " GiB")
	case b >= 1<<20:
		return unit(float64(b)/(1<<20), " MiB")
	case b >= 1<<10:
		return unit(float64(b)/(1<<10), " KiB")
	}
	return strconv.FormatUint(b, 10) + " B"
}

// Duration renders nanoseconds as µs (one decimal), ms or s (two decimals).
func Duration(ns uint64) string {
	d := time.Duration(ns)
	switch {
	case d >= time.Second:
		return strconv.FormatFloat(d.Seconds(), 'f', 2, 64) + " s"
	case d >= time.Millisecond:
		return strconv.FormatFloat(float64(d)/1e6, 'f', 2, 64) + " ms"
	}
	return strconv.FormatFloat(float64(d)/1e3, 'f', 1, 64) + " µs"
}

// Count renders n and word, plural unless n is 1: "1 page", "4 pages".
func Count(n uint64, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.FormatUint(n, 10) + " " + word + "s"
}

// Ranges renders page ranges as indexes: "0-3,8".
func Ranges(rs []record.PageRange) string {
	var b []byte
	for i, r := range rs {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendUint(b, r.Index, 10)
		if r.Pages != 1 {
			b = append(b, '-')
			b = strconv.AppendUint(b, r.Index+uint64(r.Pages)-1, 10)
		}
	}
	return string(b)
}

// sub is a-b, or 0 when b is unset (0) or not before a.
func sub(a, b uint64) uint64 {
	if a > b && b != 0 {
		return a - b
	}
	return 0
}
