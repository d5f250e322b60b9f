package timeline

import (
	"strconv"
	"strings"

	"github.com/iopath/iopath/record"
)

// Slice args use the JSON records' field names and units (README.md, "JSON
// records"): *_ns are nanoseconds. Op ids are strings: they pass 2^53, where
// JavaScript numbers (the viewers') lose digits.

func opIDString(id uint64) string { return strconv.FormatUint(id, 10) }

// callArgs annotates a call's slice: what it asked, what the page cache did,
// readahead, and the write side when it dirtied pages.
func callArgs(c *record.Syscall) map[string]any {
	a := map[string]any{
		"op_id": opIDString(c.OpID), "fd": c.Fd, "offset": c.Offset,
		"requested_bytes": c.RequestedBytes, "returned_bytes": c.ReturnedBytes,
		"pages_hit": c.Cache.PagesHit, "pages_missed": c.Cache.PagesMissed, "pages_added": c.Cache.PagesAdded,
		"blocked_ns": c.BlockedNs, "bios": len(c.Bios),
	}
	if c.Path != "" {
		a["path"] = c.Path
	}
	if c.Error != "" {
		a["error"] = c.Error
	}
	if c.Direct {
		a["direct"] = true
	}
	if ra := readaheadArg(c.Cache.Readahead); ra != "" {
		a["readahead"] = ra
	}
	if c.DirtiedPages > 0 {
		a["dirtied_pages"] = c.DirtiedPages
	}
	if c.ThrottleNs > 0 {
		a["throttle_ns"] = c.ThrottleNs
		a["throttle_pauses"] = c.ThrottlePauses
	}
	if c.ReadBeforeWritePages > 0 {
		a["read_before_write_pages"] = c.ReadBeforeWritePages
	}
	if len(c.Unavailable) > 0 {
		a["unavailable"] = strings.Join(c.Unavailable, ", ")
	}
	return a
}

// faultName is what a fault's slice shows: "major fault", "minor fault",
// with " (write)" for a store.
func faultName(f *record.Fault) string {
	n := "minor fault"
	if f.Major {
		n = "major fault"
	}
	if f.Write {
		n += " (write)"
	}
	return n
}

// faultArgs annotates a fault's slice: the page and address, what the page
// cache did, read-around or readahead, the pages it dirtied.
func faultArgs(f *record.Fault) map[string]any {
	a := map[string]any{
		"op_id": opIDString(f.OpID), "index": f.Index, "address": "0x" + strconv.FormatUint(f.Address, 16),
		"write": f.Write, "major": f.Major, "pages_hit": f.Cache.PagesHit, "pages_missed": f.Cache.PagesMissed,
		"pages_added": f.Cache.PagesAdded, "blocked_ns": f.BlockedNs, "bios": len(f.Bios),
	}
	if f.Path != "" {
		a["path"] = f.Path
	}
	if f.Retried {
		a["retried"] = true
	}
	if f.Signal != "" {
		a["signal"] = f.Signal
	}
	if ra := readaheadArg(f.Cache.Readahead); ra != "" {
		a["readahead"] = ra
	}
	if f.FaultAround != nil {
		a["fault_around"] = strconv.FormatUint(uint64(f.FaultAround.Pages), 10) + " pages from page " + strconv.FormatUint(f.FaultAround.Index, 10)
	}
	if f.DirtiedPages > 0 {
		a["dirtied_pages"] = f.DirtiedPages
	}
	if len(f.Unavailable) > 0 {
		a["unavailable"] = strings.Join(f.Unavailable, ", ")
	}
	return a
}

// readaheadArg lists readahead decisions: "KIND N pages from page I, …".
func readaheadArg(ras []record.Readahead) string {
	var ra []string
	for _, r := range ras {
		ra = append(ra, string(r.Kind)+" "+strconv.FormatUint(uint64(r.Pages), 10)+" pages from page "+strconv.FormatUint(r.StartIndex, 10))
	}
	return strings.Join(ra, ", ")
}

// bioName is what a bio's slice shows: its rwbs flags and size.
func bioName(b *record.Bio) string {
	n := b.Rwbs + " " + size(uint64(b.Bytes))
	if b.Kind != "" {
		n += " " + string(b.Kind)
	}
	return n
}

func bioArgs(b *record.Bio, opID uint64, reason string) map[string]any {
	a := map[string]any{
		"dev": b.Dev, "sector": b.Sector, "bytes": b.Bytes, "rwbs": b.Rwbs,
		"queue_ns": b.QueueNs, "issue_ns": b.IssueNs, "complete_ns": b.CompleteNs,
		"d2c_ns": b.D2CNs, "q2c_ns": b.Q2CNs, "request_bytes": b.RequestBytes, "request_bios": b.RequestBios,
	}
	if opID != 0 {
		a["op_id"] = opIDString(opID)
	}
	if b.CompleteNs == 0 {
		a["completion"] = "not seen"
	}
	if b.Kind != "" {
		a["kind"] = b.Kind
	}
	if b.Error != "" {
		a["error"] = b.Error
	}
	if b.Requeues > 0 {
		a["requeues"] = b.Requeues
	}
	if reason != "" {
		a["writeback_reason"] = reason
	}
	return a
}

func writebackArgs(w *record.Writeback) map[string]any {
	a := map[string]any{"reason": w.Reason, "worker": w.Worker, "worker_tid": w.WorkerTid, "dev": w.Dev,
		"ino": w.Ino, "pages": w.Pages, "tracked_pages": w.TrackedPages, "bios": len(w.Bios)}
	if w.Path != "" {
		a["path"] = w.Path
	}
	return a
}

func dirtyName(p *record.Persisted) string {
	n := strconv.FormatUint(uint64(p.Pages), 10) + " dirty page"
	if p.Pages != 1 {
		n += "s"
	}
	if p.Outcome == record.OutcomeFailed {
		return n + " → write failed"
	}
	return n + " → disk"
}

func persistedArgs(p *record.Persisted) map[string]any {
	a := map[string]any{"op_id": opIDString(p.OpID), "pages": p.Pages, "bytes_written": p.BytesWritten,
		"outcome": p.Outcome, "dirtied_ns": p.DirtiedNs, "persisted_ns": p.PersistedNs,
		"dirty_to_disk_ns": p.DirtyToDiskNs, "reason": p.Reason, "sector": p.Sector}
	if p.Worker != "" {
		a["worker"] = p.Worker
	}
	if p.ByOpID != 0 {
		a["by_op_id"] = opIDString(p.ByOpID)
	}
	if p.Path != "" {
		a["path"] = p.Path
	}
	if p.Error != "" {
		a["error"] = p.Error
	}
	return a
}

// size renders bytes as people read them (KiB = 1024 B).
func size(b uint64) string {
	switch {
	case b >= 1<<20 && b%(1<<20) == 0:
		return strconv.FormatUint(b>>20, 10) + " MiB"
	case b >= 1<<10 && b%(1<<10) == 0:
		return strconv.FormatUint(b>>10, 10) + " KiB"
	}
	return strconv.FormatUint(b, 10) + " B"
}
