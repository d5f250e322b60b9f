package engine

import (
	"github.com/iopath/iopath/bpf"
	"github.com/iopath/iopath/record"
)

// Readahead kinds (struct ra_ev.kind): bpf/events.h's enum ra_kind,
// through bpf2go.
const (
	RASync  = uint32(bpf.IopathRaKindRA_SYNC)  // page_cache_sync_ra
	RAAsync = uint32(bpf.IopathRaKindRA_ASYNC) // page_cache_async_ra
	RAOrder = uint32(bpf.IopathRaKindRA_ORDER) // window seen only at page_cache_ra_order: kind unknown
)

// readahead attributes the call's readahead windows: the decisions the
// kernel's readahead hooks recorded (kind, window, async trigger), or, on a
// kernel without a readahead hook, one window derived from the pages the
// call inserted beyond its request (first: its first requested page;
// beyond: the first added range past the request).
func readahead(rec *record.Syscall, o *bpf.IopathOp, first, beyond uint64) {
	nra := int(o.NrRa)
	if nra > len(o.Ra) {
		nra = len(o.Ra)
	}
	for i := 0; i < nra; i++ {
		r := o.Ra[i]
		kind := record.ReadaheadUnknown
		switch r.Kind {
		case RASync:
			kind = record.ReadaheadSync
		case RAAsync:
			kind = record.ReadaheadAsync
		}
		ra := record.Readahead{Kind: kind, StartIndex: r.Start, Pages: r.Size, AsyncPages: r.AsyncSize, Source: record.SourceKernel}
		if r.Size == 0 {
			// The kernel did not size a window (e.g. 6.18's random-access
			// path reads just the requested pages): report what it added
			// from the trigger index on.
			for _, a := range rec.Cache.AddedRanges {
				if a.Index+uint64(a.Pages) > r.Start {
					ra.Pages += a.Pages - uint32(min(a.Pages, uint32(sub(r.Start, a.Index))))
				}
			}
			ra.Source = record.SourceKernelAdded
		}
		rec.Cache.Readahead = append(rec.Cache.Readahead, ra)
	}
	if readahead := rec.Cache.PagesAdded - min(rec.Cache.PagesMissed, rec.Cache.PagesAdded); nra == 0 && readahead > 0 && sysClass(o.Sys) != record.ClassWrite {
		// No readahead hook on this kernel: pages inserted past the request
		// were read ahead (sync if the call also missed, else async).
		kind := record.ReadaheadAsync
		if rec.Cache.PagesMissed > 0 {
			kind = record.ReadaheadSync
		}
		start := beyond
		pages := uint32(readahead)
		if rec.Cache.PagesMissed > 0 && start > first {
			start = first
			pages += uint32(rec.Cache.PagesMissed)
		}
		rec.Cache.Readahead = append(rec.Cache.Readahead, record.Readahead{Kind: kind, StartIndex: start, Pages: pages, Source: record.SourceDerived})
	}
}
