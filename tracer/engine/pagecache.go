package engine

import (
	"github.com/iopath/iopath/bpf"
	"github.com/iopath/iopath/record"
)

// Page-range flags (struct page_range.flags): bpf/events.h's enum
// range_flag, through bpf2go (renumbered in C, they follow at go generate).
const (
	RangeAdded   = uint32(bpf.IopathRangeFlagRANGE_ADDED)   // folios inserted into the page cache during the call
	RangeDirtied = uint32(bpf.IopathRangeFlagRANGE_DIRTIED) // folios turned dirty (clean->dirty) by the call
)

// pageCache fills a call's page-cache fields from its kernel record.
// Page-cache arithmetic, per call:
//   - pages_requested: pages spanned by the bytes the call returned
//     (reads and writes; 0 for O_DIRECT, fsync-family calls and errors);
//   - pages_missed: requested pages the call itself inserted into the cache;
//   - pages_hit = requested - missed (never negative);
//   - pages_added: every page the call inserted, readahead beyond the request included.
//
// It returns the first requested page and the first added range reaching
// past the request (0 when none), where a derived readahead window starts.
func pageCache(rec *record.Syscall, o *bpf.IopathOp, blk *recordBlock) (first, beyond uint64) {
	var last uint64
	if o.Ret > 0 && sysClass(o.Sys) != record.ClassSync && !rec.Direct {
		first = o.Offset >> 12
		last = (o.Offset + uint64(o.Ret) - 1) >> 12
		rec.Cache.PagesRequested = last - first + 1
	}
	n := int(o.NrRanges)
	if n > len(o.Ranges) {
		n = len(o.Ranges)
	}
	// Counts come from the kernel's totals (exact); the ranges, which may
	// be truncated, only say where.
	rec.Cache.PagesAdded = uint64(o.PagesAdded)
	if rec.Cache.PagesRequested > 0 {
		rec.Cache.PagesMissed = uint64(o.PagesInRange)
	}
	haveBeyond := false
	for i := 0; i < n; i++ {
		r := o.Ranges[i]
		pr := record.PageRange{Index: r.Index, Pages: r.Nr}
		switch r.Flags {
		case RangeAdded:
			if rec.Cache.AddedRanges == nil && blk != nil {
				rec.Cache.AddedRanges = blk.added[:0]
			}
			rec.Cache.AddedRanges = append(rec.Cache.AddedRanges, pr)
			if in := overlap(r.Index, r.Index+uint64(r.Nr)-1, first, last, rec.Cache.PagesRequested > 0); in < uint64(r.Nr) && !haveBeyond {
				beyond, haveBeyond = r.Index, true
			}
		case RangeDirtied:
			rec.DirtiedRanges = append(rec.DirtiedRanges, pr)
		}
	}
	if o.RangesLost > 0 {
		rec.Truncated = &record.Truncations{RangePages: o.RangesLost}
	}
	if rec.Cache.PagesMissed > rec.Cache.PagesRequested {
		rec.Cache.PagesMissed = rec.Cache.PagesRequested
	}
	rec.Cache.PagesHit = rec.Cache.PagesRequested - rec.Cache.PagesMissed
	return first, beyond
}

// overlap counts pages of [a0,a1] inside [b0,b1].
func overlap(a0, a1, b0, b1 uint64, valid bool) uint64 {
	if !valid || a1 < b0 || a0 > b1 {
		return 0
	}
	lo, hi := max(a0, b0), min(a1, b1)
	return hi - lo + 1
}
