package engine

import "github.com/iopath/iopath/record"

// sync(2) and syncfs(2) write almost nothing themselves: ksys_sync
// (fs/sync.c) wakes the flusher threads for every dirty inode
// (WB_REASON_SYNC), then each filesystem's sync_inodes_sb queues a
// WB_SYNC_ALL work to its flusher and waits for it, ->sync_fs commits the
// journal (ext4: and sends a cache flush, blkdev_issue_flush, when the
// commit does not carry one), and the block devices' own caches are
// written. The data bios are the flusher threads', with reason sync: they
// are remembered here (those with pages of traced calls, the only ones the
// kernel side reports; the last maxSyncWB) so that a sync or syncfs record
// says how many were written while it waited.

const maxSyncWB = 1 << 16

// syncWBBio is one flusher writeback bio with reason sync.
type syncWBBio struct {
	queueNs uint64
	dev     uint32
	bytes   uint32
}

type syncWBState struct {
	bios    []syncWBBio // in completion order, at most maxSyncWB
	oldest  uint64      // queue time of the oldest bio forgotten (0: none)
	dropped bool
}

// noteSyncWB remembers a flusher bio written for a sync.
func (e *Engine) noteSyncWB(queueNs uint64, dev, bytes uint32) {
	s := &e.syncWB
	if len(s.bios) >= maxSyncWB {
		half := len(s.bios) / 2
		s.oldest = max(s.oldest, s.bios[half-1].queueNs)
		s.dropped = true
		s.bios = append(s.bios[:0], s.bios[half:]...)
	}
	s.bios = append(s.bios, syncWBBio{queueNs: queueNs, dev: dev, bytes: bytes})
}

// syncWriteback is what the flusher threads wrote with reason sync while
// rec (sync, or syncfs on device kdev) ran: bios queued between its start
// and its end. A concurrent sync's bios count for both: they served both.
func (e *Engine) syncWriteback(rec *record.Syscall, kdev uint32) *record.SyncWriteback {
	start, end := rec.TimeNs, rec.TimeNs+rec.DurationNs
	w := &record.SyncWriteback{AtLeast: e.syncWB.dropped && e.syncWB.oldest >= start}
	for _, b := range e.syncWB.bios {
		if b.queueNs >= start && b.queueNs <= end && (rec.Syscall == "sync" || b.dev == kdev) {
			w.Bios++
			w.Bytes += uint64(b.bytes)
		}
	}
	return w
}
