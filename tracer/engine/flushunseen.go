package engine

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/iopath/iopath/bpf"
	"github.com/iopath/iopath/record"
)

// Flush requests whose completion no BPF program saw (docs/kernel-notes.md,
// "Completions BPF never sees"). bpf/flush.c reports one when a hardware
// queue's flush request is issued again with neither a completion nor a
// requeue seen since its last issue: the kernel had ended it. The calls it
// served ended in the same unseen softirq (flush_end_io ends each waiting
// request), so their empty PREFLUSH bios never reach iopath either. Each
// fsync-family call still waiting for a bio on that disk, that started
// before the flush was issued and returned after it, gets the flush as its
// device flush: issue time known, completed before the call returned (or
// before the flush request's next issue), no device time.

// OwnFlushUnseen is OWN_FLUSH_UNSEEN (bpf/events.h, enum own_flag): an
// EV_FLUSH_DONE that stands for a flush request completed unseen.
const OwnFlushUnseen = uint32(bpf.IopathOwnFlagOWN_FLUSH_UNSEEN)

// maxUnseenFlushes bounds the flushes kept for calls whose records have
// not arrived yet (a record can follow the next flush's issue in the ring).
const maxUnseenFlushes = 32

// unseenFlush is a flush request completed unseen.
type unseenFlush struct {
	disk     uint32 // kernel dev_t of the disk
	rq       uint64 // the flush request (struct request *)
	issueNs  uint64 // its issue
	reusedNs uint64 // its next issue: it had completed by then
	rwbs     string
}

// flushUnseen takes an EV_FLUSH_DONE marked OwnFlushUnseen.
func (e *Engine) flushUnseen(ev *bpf.IopathFlushDoneEv) {
	u := unseenFlush{disk: ev.Dev, rq: ev.FlushRq, issueNs: ev.FlushIssueNs, reusedNs: ev.DoneNs, rwbs: e.rwbsName(ev.FlushFlags)}
	if len(e.flush.unseen) >= maxUnseenFlushes {
		e.flush.unseen = append(e.flush.unseen[:0], e.flush.unseen[1:]...)
	}
	e.flush.unseen = append(e.flush.unseen, u)
	for id, p := range e.ops {
		e.tryRelease(id, p) // claimUnseenFlush
	}
}

// claimUnseenFlush gives a ready fsync-family call that still waits for a
// bio the flush completed unseen that served it, if one is known; it says
// whether it did.
func (e *Engine) claimUnseenFlush(p *pendingOp) bool {
	if p.rec == nil || !record.IsSync(p.rec.Syscall) {
		return false
	}
	start, end := p.startNs(), p.endNs()
	disk := e.diskOf(p.kdev)
	for i := len(e.flush.unseen) - 1; i >= 0; i-- {
		u := &e.flush.unseen[i]
		if u.disk != disk || u.issueNs <= start || u.issueNs >= end {
			continue
		}
		for _, b := range p.bios {
			if b.flags&ownFlushReq != 0 && b.IssueNs == u.issueNs {
				return false // already given
			}
		}
		fl := record.Bio{Dev: e.devName(u.disk), IssueNs: u.issueNs, CompletedBeforeNs: min(end, u.reusedNs),
			Rwbs: u.rwbs, Kind: record.BioFlush}
		f := e.flushRef(fl, p.rec.OpID, p.rec.Pid)
		f.bioP = u.rq // stands for the call's empty flush bio, never seen
		p.bios = append(p.bios, f)
		e.counters.CompletionsUnseen++
		return true
	}
	return false
}

// diskOf is the disk a device number belongs to: itself, or for a
// partition its disk (sysfs; cached). The flush events name disks, calls
// their file's device.
func (e *Engine) diskOf(kdev uint32) uint32 {
	if d, ok := e.flush.disks[kdev]; ok {
		return d
	}
	if e.flush.disks == nil {
		e.flush.disks = map[uint32]uint32{}
	}
	d := kdev
	if e.DiskOf != nil {
		d = e.DiskOf(kdev)
		e.flush.disks[kdev] = d
		return d
	}
	base := fmt.Sprintf("/sys/dev/block/%d:%d", kdev>>20, kdev&(1<<20-1))
	if _, err := os.Stat(base + "/partition"); err == nil {
		if b, err := os.ReadFile(base + "/../dev"); err == nil {
			var maj, min uint32
			if _, err := fmt.Sscanf(strings.TrimSpace(string(b)), "%d:%d", &maj, &min); err == nil {
				d = maj<<20 | min
			}
		}
	}
	e.flush.disks[kdev] = d
	return d
}

// unavailableUnseen names, in a record's unavailable list, what a bio
// completed unseen cannot give.
const unavailableUnseen = "bios.complete_ns, d2c_ns, q2c_ns of bios with completed_before_ns (completion not seen by BPF)"

// unseenTimes tightens the bound of a call's bios completed unseen to the
// call's return where the call waited for them (the fsync family and
// O_DIRECT: a bio cannot complete after the call that waited for it
// returned), and says in unavailable which times are missing.
func unseenTimes(rec *record.Syscall) {
	end, waited := rec.TimeNs+rec.DurationNs, record.IsSync(rec.Syscall) || rec.Direct
	any := false
	for i := range rec.Bios {
		b := &rec.Bios[i]
		if b.CompletedBeforeNs == 0 {
			continue
		}
		any = true
		if waited && end > b.IssueNs && end < b.CompletedBeforeNs {
			b.CompletedBeforeNs = end
		}
	}
	if any && !slices.Contains(rec.Unavailable, unavailableUnseen) {
		rec.Unavailable = append(rec.Unavailable, unavailableUnseen)
	}
}
