package engine

import (
	"cmp"
	"slices"
)

// Requests whose completion no BPF program saw and whose address the
// kernel never issued again before the trace ended (docs/kernel-notes.md,
// "Completions BPF never sees"): completionLost cannot infer their end, so
// they stayed held "in flight" until the end, their bios released as
// incomplete (no_completion: TestTracePgbench saw 19, and
// TestFaultColdMappingStride 3 read-ahead bios without a completion).
//
// After the settle the tracer reads each disk's own count of requests in
// flight (/sys/dev/block/M:m/inflight, reads plus writes, which the block
// layer keeps when queue/iostats is 1) and hands it to EndUnseen. That
// count is an upper bound on how many of the requests iopath holds there
// can truly be in flight: it counts every request the driver has started
// and not ended, other processes' too. The oldest held requests beyond it
// had ended: they are completed unseen, like a reused address
// (completedUnseen), before the moment of the read.

// HeldDisks returns the disks (kernel dev_t, ascending) on which iopath
// holds requests: issued, their completion not seen.
func (e *Engine) HeldDisks() []uint32 {
	var devs []uint32
	for _, rq := range e.rqs {
		if !slices.Contains(devs, rq.kdev) {
			devs = append(devs, rq.kdev)
		}
	}
	slices.Sort(devs)
	return devs
}

// EndUnseen bounds, at the end of a trace, the requests held on disk kdev
// by inflight, the disk's own count of requests in flight, read after
// issuedBefore and before readNs (CLOCK_MONOTONIC). Only requests issued
// before issuedBefore are weighed (a later one may have started after the
// read), and not a requeued one waiting to be issued again (the kernel
// counts it only once it is). If more of them are held than inflight, the
// oldest ones beyond it had ended before readNs: completed unseen, their
// bios completed before readNs, counted in RequestsUnseenAtEnd. The rest
// stay held: truly in flight, for all iopath can tell. It returns how many
// requests it completed.
func (e *Engine) EndUnseen(kdev uint32, inflight uint64, issuedBefore, readNs uint64) int {
	type held struct{ key, issueNs uint64 }
	var hs []held
	for key, rq := range e.rqs {
		if rq.kdev == kdev && !rq.requeued && rq.issueNs < issuedBefore {
			hs = append(hs, held{key, rq.issueNs})
		}
	}
	if uint64(len(hs)) <= inflight {
		return 0
	}
	slices.SortFunc(hs, func(a, b held) int { return cmp.Or(cmp.Compare(a.issueNs, b.issueNs), cmp.Compare(a.key, b.key)) })
	n := len(hs) - int(inflight)
	for _, h := range hs[:n] {
		rq := e.rqs[h.key]
		delete(e.rqs, h.key)
		e.rqCompleted(kdev) // asyncio.go
		e.counters.RequestsUnseenAtEnd++
		e.completedUnseen(rq, readNs) // requests.go
	}
	return n
}
