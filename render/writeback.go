package render

import (
	"fmt"
	"strings"

	"github.com/iopath/iopath/record"
)

// WritebackStory is the text story of a writeback bio carrying pages
// dirtied by traced calls or write faults: worker, reason, file, its bios.
func WritebackStory(w *record.Writeback) string {
	target := Safe(w.Path)
	if target == "" {
		target = fmt.Sprintf("dev %s ino %d", w.Dev, w.Ino)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "writeback: %s (tid %d, reason %s) wrote %s: %s in the bio, %d dirtied by traced calls or faults\n",
		w.Worker, w.WorkerTid, w.Reason, target, Count(uint64(w.Pages), "page"), w.TrackedPages)
	for _, bio := range w.Bios {
		b.WriteString("  " + bioLine(bio) + "\n")
	}
	return b.String()
}

// opName shows an op_id as tid:sequence (the call's thread and its n-th traced call).
func opName(id uint64) string {
	if id == 0 {
		return "(outside any traced call)"
	}
	return fmt.Sprintf("%d:%d", id>>32, id&0xffffffff)
}

// PersistedStory says when (or whether) the pages a write call (or a
// store through a shared mapping: a write fault) dirtied reached the disk.
func PersistedStory(p *record.Persisted) string {
	target := Safe(p.Path)
	if target == "" {
		target = fmt.Sprintf("dev %s ino %d", p.Dev, p.Ino)
	}
	by, after := "call "+opName(p.OpID), "write"
	if p.Fault != nil {
		by, after = fmt.Sprintf("the write fault %s at %#x (page %d)", opName(p.OpID), p.Fault.Address, p.Fault.Index), "store"
	}
	switch p.Outcome {
	case record.OutcomeRemoved:
		return fmt.Sprintf("persisted: never: %s dirtied by %s in %s left the page cache before writeback (truncated or evicted)\n", Count(uint64(p.Pages), "page"), by, target)
	case record.OutcomeFailed:
		return fmt.Sprintf("persisted: FAILED: %s of %s in %s: %s\n", Count(uint64(p.Pages), "page"), by, target, p.Error)
	}
	what := Count(uint64(p.Pages), "page")
	if p.BytesWritten != uint64(p.Pages)*4096 {
		what = fmt.Sprintf("%s of the %s", Bytes(p.BytesWritten), Count(uint64(p.Pages), "dirty page")) // part of a large folio
	}
	when, unseen := Duration(p.DirtyToDiskNs), ""
	if p.PersistedNs == 0 && p.PersistedBeforeNs != 0 {
		// The request's completion was not seen: a bound.
		when, unseen = "at most "+Duration(sub(p.PersistedBeforeNs, p.DirtiedNs)), "; completion not seen by BPF"
	}
	return fmt.Sprintf("persisted: %s dirtied by %s reached the disk %s after the %s (%s, %s%s), sector %d of %s\n",
		what, by, when, after, p.Reason, p.Worker, unseen, p.Sector, target)
}
