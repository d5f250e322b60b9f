// Package render turns records into text.
package render

// INTERIM (branch cli): copies of cmd/iopath/output.go's formatters, so that
// render/workload.go and demo/ compile before render/ gets them from the
// render helper's move of output.go. At merge: delete this file and point
// the callers at the moved functions.

import (
	"strconv"
	"time"

	"github.com/iopath/iopath/tracer"
)

// Human is output.go's human.
func Human(b uint64) string {
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

// Dur is output.go's dur.
func Dur(ns uint64) string {
	d := time.Duration(ns)
	switch {
	case d >= time.Second:
		return strconv.FormatFloat(d.Seconds(), 'f', 2, 64) + " s"
	case d >= time.Millisecond:
		return strconv.FormatFloat(float64(d)/1e6, 'f', 2, 64) + " ms"
	}
	return strconv.FormatFloat(float64(d)/1e3, 'f', 1, 64) + " µs"
}

// Plural is output.go's pl.
func Plural(n uint64, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.FormatUint(n, 10) + " " + word + "s"
}

// Ranges is output.go's ranges.
func Ranges(rs []tracer.PageRange) string {
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
