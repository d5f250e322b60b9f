package workloads

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ParseSize parses a byte count: a non-negative integer with an optional,
// case-insensitive suffix k, m, g or t (powers of 1024; "KiB", "kb" and "KB"
// mean the same), e.g. "1", "4k", "64M", "1GiB".
func ParseSize(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	digits := strings.TrimRightFunc(t, func(r rune) bool { return r < '0' || r > '9' })
	shift, ok := sizeSuffixes[t[len(digits):]]
	n, err := strconv.ParseInt(digits, 10, 64)
	if !ok || err != nil || n < 0 {
		return 0, fmt.Errorf("invalid size %q: use a number of bytes with an optional k, m, g or t suffix (powers of 1024), e.g. 4k or 64M", s)
	}
	if n > math.MaxInt64>>shift {
		return 0, fmt.Errorf("size %q is too large: at most %d bytes", s, int64(math.MaxInt64))
	}
	return n << shift, nil
}

// sizeSuffixes maps ParseSize's suffixes to their power of two.
var sizeSuffixes = map[string]int{
	"": 0, "b": 0,
	"k": 10, "kb": 10, "kib": 10,
	"m": 20, "mb": 20, "mib": 20,
	"g": 30, "gb": 30, "gib": 30,
	"t": 40, "tb": 40, "tib": 40,
}

// FormatSize renders a byte count the way ParseSize reads it when it is a
// whole number of KiB, MiB, GiB or TiB ("4KiB"), else as bytes ("1000B").
func FormatSize(n int64) string {
	for _, u := range []struct {
		shift int
		name  string
	}{{40, "TiB"}, {30, "GiB"}, {20, "MiB"}, {10, "KiB"}} {
		if n != 0 && n%(1<<u.shift) == 0 {
			return strconv.FormatInt(n>>u.shift, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}

// SetSizes fills BlockSize and FileSize from --bs and --size (empty: the
// default), refusing an explicit 0.
func (s *Spec) SetSizes(bs, size string) error {
	for _, v := range []struct {
		flag, val string
		dst       *int64
		example   string
	}{{"--bs", bs, &s.BlockSize, "4k"}, {"--size", size, &s.FileSize, "64m"}} {
		if v.val == "" {
			continue
		}
		n, err := ParseSize(v.val)
		if err != nil {
			return fmt.Errorf("%s: %w", v.flag, err)
		}
		if n == 0 {
			return fmt.Errorf("%s %s: a size of 0 leaves nothing to do; give a positive size, e.g. %s %s", v.flag, v.val, v.flag, v.example)
		}
		*v.dst = n
	}
	return nil
}
