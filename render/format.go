package render

import (
	"slices"
	"strconv"
	"time"

	"github.com/iopath/iopath/record"
)

// Safe quotes a name with control characters (a newline or escape sequence
// in a file name must not break the output).
func Safe(s string) string {
	if !needsQuote(s) {
		return s
	}
	return strconv.Quote(s)
}

// needsQuote reports a control character (below 0x20, or DEL) in s. Bytes,
// not runes: every byte of a multi-byte UTF-8 sequence (and U+FFFD, what an
// invalid byte decodes to) is 0x80 or more, so the answer is the rune
// loop's without the decoding (a path and a comm per story).
func needsQuote(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f {
			return true
		}
	}
	return false
}

// appendSafe appends Safe(s).
func appendSafe(b []byte, s string) []byte {
	if !needsQuote(s) {
		return append(b, s...)
	}
	return strconv.AppendQuote(b, s)
}

// Bytes, Duration, Count and Ranges format with strconv rather than fmt:
// the default mode prints one story per missed call, at up to tens of
// thousands per second (same output as the fmt verbs they replace). Their
// append forms serve the stories, built in one reused buffer.

// Bytes renders a byte count the way people read it (KiB = 1024 B, one
// decimal): "512 B", "16.0 KiB".
func Bytes(b uint64) string { return string(appendBytes(nil, b)) }

func appendBytes(b []byte, n uint64) []byte {
	unit := func(shift uint, u string) []byte {
		if n < 1<<53 { // float64(n) and its quotient by 2^shift are exact
			if q, ok := appendQuotient(b, n, 1<<shift, 1); ok {
				return append(q, u...)
			}
		}
		return append(strconv.AppendFloat(b, float64(n)/float64(uint64(1)<<shift), 'f', 1, 64), u...)
	}
	switch {
	case n >= 1<<30:
		return unit(30, " GiB")
	case n >= 1<<20:
		return unit(20, " MiB")
	case n >= 1<<10:
		return unit(10, " KiB")
	}
	return append(appendUint(b, n), " B"...)
}

// Duration renders nanoseconds as µs (one decimal), ms or s (two decimals).
func Duration(ns uint64) string { return string(appendDuration(nil, ns)) }

func appendDuration(b []byte, ns uint64) []byte {
	d := time.Duration(ns)
	switch {
	case d >= time.Second:
		if ns < exactBelow {
			if q, ok := appendQuotient(b, ns, 1e9, 2); ok {
				return append(q, " s"...)
			}
		}
		return append(strconv.AppendFloat(b, d.Seconds(), 'f', 2, 64), " s"...)
	case d >= time.Millisecond:
		if q, ok := appendQuotient(b, ns, 1e6, 2); ok {
			return append(q, " ms"...)
		}
		return append(strconv.AppendFloat(b, float64(d)/1e6, 'f', 2, 64), " ms"...)
	}
	if ns < 1e6 { // else negative as a time.Duration (≥ 2^63)
		if q, ok := appendQuotient(b, ns, 1e3, 1); ok {
			return append(q, " µs"...)
		}
	}
	return append(strconv.AppendFloat(b, float64(d)/1e3, 'f', 1, 64), " µs"...)
}

// exactBelow bounds the durations (ns) whose seconds appendQuotient prints
// as strconv prints d.Seconds(): below it (11.6 days) the float's error is
// under a nanosecond, so it cannot cross a rounding boundary that the
// integer quotient is at least a nanosecond away from.
const exactBelow = 1e15

// appendQuotient appends num/den rounded to prec (1 or 2) decimals, as
// strconv.AppendFloat(b, float64(num)/float64(den), 'f', prec, 64) does, in
// integer arithmetic: strconv's shortest-digit search was ~13 % of iopath's
// CPU in the default mode (two to four numbers per story; perf, 4 KiB cold
// reads). The float quotient differs from num/den by less than the distance
// from num/den to a rounding boundary unless num/den is exactly halfway
// between two outputs; there the float's own rounding error decides, and
// appendQuotient returns ok=false for the caller's strconv call. den·100
// must not overflow.
func appendQuotient(b []byte, num, den uint64, prec int) ([]byte, bool) {
	scale := uint64(10)
	if prec == 2 {
		scale = 100
	}
	whole, rem := num/den, num%den
	frac, left := rem*scale/den, rem*scale%den
	switch {
	case 2*left == den:
		return b, false // halfway
	case 2*left > den:
		if frac++; frac == scale {
			whole, frac = whole+1, 0
		}
	}
	b = appendUint(b, whole)
	b = append(b, '.')
	if prec == 2 && frac < 10 {
		b = append(b, '0')
	}
	return appendUint(b, frac), true
}

// Count renders n and word, plural unless n is 1: "1 page", "4 pages".
func Count(n uint64, word string) string { return string(appendCount(nil, n, word)) }

func appendCount(b []byte, n uint64, word string) []byte {
	b = appendUint(b, n)
	b = append(b, ' ')
	b = append(b, word...)
	if n != 1 {
		b = append(b, 's')
	}
	return b
}

// Ranges renders page ranges as indexes: "0-3,8".
func Ranges(rs []record.PageRange) string { return string(appendRanges(nil, rs)) }

func appendRanges(b []byte, rs []record.PageRange) []byte {
	for i, r := range rs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendUint(b, r.Index)
		if r.Pages != 1 {
			b = append(b, '-')
			b = appendUint(b, r.Index+uint64(r.Pages)-1)
		}
	}
	return b
}

// sub is a-b, or 0 when b is unset (0) or not before a.
func sub(a, b uint64) uint64 {
	if a > b && b != 0 {
		return a - b
	}
	return 0
}

// appendUint appends v in decimal, as strconv.AppendUint(b, v, 10) does,
// writing the digits in place: strconv formats into a buffer of its own
// and copies it (a memmove call per number, ~3 % of the story path in
// BenchmarkDispatchMissText; this is ~25 % faster for the story's mostly
// short numbers, but slower for 19-digit ones: JSON's nanosecond
// timestamps keep strconv, BenchmarkDispatchMissJSON 0.06 µs per call slower).
func appendUint(b []byte, v uint64) []byte {
	n := 1
	for x := v; x >= 10; x /= 10 {
		n++
	}
	b = slices.Grow(b, n)
	b = b[:len(b)+n]
	for i := len(b) - 1; ; i-- {
		b[i] = byte('0' + v%10)
		if v /= 10; v == 0 {
			return b
		}
	}
}
