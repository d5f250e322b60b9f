package aggregate

import (
	"math"

	"github.com/iopath/iopath/bpf"
)

// Buckets is the number of log2 buckets of a histogram (bpf/agg.h).
const Buckets = len(bpf.IopathAggIo{}.Lat[0])

// Hist is a log2 histogram of nanoseconds: bucket i counts values in
// [2^i, 2^(i+1)) ns, bucket 0 also 0 and 1, the last bucket everything from
// 2^(Buckets-1) ns (~2.1 s) up.
type Hist [Buckets]uint64

// Lower is bucket i's lower bound in ns.
func Lower(i int) float64 {
	if i == 0 {
		return 0
	}
	return math.Ldexp(1, i)
}

// Upper is bucket i's upper bound in ns (+Inf for the last bucket).
func Upper(i int) float64 {
	if i == Buckets-1 {
		return math.Inf(1)
	}
	return math.Ldexp(1, i+1)
}

// Count is the number of values.
func (h *Hist) Count() uint64 {
	var n uint64
	for _, c := range h {
		n += c
	}
	return n
}

// Add adds o's counts to h.
func (h *Hist) Add(o *Hist) {
	for i := range h {
		h[i] += o[i]
	}
}

// Sub returns h - o per bucket (0 where o is larger).
func (h Hist) Sub(o *Hist) Hist {
	var d Hist
	for i := range h {
		d[i] = sub(h[i], o[i])
	}
	return d
}

// Quantile estimates the q-quantile (0 < q ≤ 1) in ns, interpolating
// linearly inside the bucket that holds it, as Prometheus's
// histogram_quantile does; a value in the last (open) bucket is given as
// its lower bound. ok is false for an empty histogram. The estimate is
// within the bucket's bounds: at worst a factor of 2 from the true value.
func (h *Hist) Quantile(q float64) (ns float64, ok bool) {
	n := h.Count()
	if n == 0 || q <= 0 || q > 1 {
		return 0, false
	}
	rank := q * float64(n)
	var seen float64
	for i, c := range h {
		if c == 0 {
			continue
		}
		if seen+float64(c) >= rank {
			if i == Buckets-1 {
				return Lower(i), true
			}
			lo, hi := Lower(i), Upper(i)
			return lo + (hi-lo)*(rank-seen)/float64(c), true
		}
		seen += float64(c)
	}
	return Lower(Buckets - 1), true
}
