package engine

import (
	"slices"

	"github.com/iopath/iopath/bpf"
	"github.com/iopath/iopath/record"
	"github.com/iopath/iopath/tracer/kernel"
)

// Flush requests named at their issue (bpf/flush.c, flush_waiters): the
// kernel's flush machinery (block/blk-flush.c) serves every request waiting
// on a hardware queue's running flush list with one flush request, and the
// BPF program reports each owned bio on that list (OwnFlushServes) before
// the request runs, then the request's completion (OwnFlushEnd). So the
// engine knows exactly which bio each flush served:
//   - a call's empty PREFLUSH bio (fsync's blkdev_issue_flush): the flush
//     request becomes the call's flush bio and stands for that bio;
//   - a jbd2 commit record (PREFLUSH|FUA) on a device without FUA: its
//     pre-flush and its post-flush are two flush requests, both given to
//     the call the record is attributed to (OwnJournal) and remembered for
//     the commit (OwnCommitRec);
//   - a call that waited for a commit (OwnCommitWait: the jbd2 thread woke
//     it after the commit's end) gets that commit's flush requests, whoever
//     started the commit;
//   - an ext4 call then says which transaction it needed (OwnCommitNeed, at
//     the end of ext4_sync_file): that commit's flush requests replace the
//     wake's, which may be an earlier commit's (woken after it, the call
//     slept again, or ran only once its own had ended: no wake names that
//     one) or none (it never slept: its transaction was committing or
//     committed when it asked).

// Flush event marks (bpf/events.h, enum own_flag) and, in userspace only,
// the mark of a flush bio a call got by waiting for a journal commit.
const (
	OwnFlushServes = uint32(bpf.IopathOwnFlagOWN_FLUSH_SERVES)
	OwnFlushEnd    = uint32(bpf.IopathOwnFlagOWN_FLUSH_END)
	OwnCommitWait  = uint32(bpf.IopathOwnFlagOWN_COMMIT_WAIT)
	OwnCommitRec   = uint32(bpf.IopathOwnFlagOWN_COMMIT_REC)
	OwnCommitNeed  = uint32(bpf.IopathOwnFlagOWN_COMMIT_NEED)
	ownCommitJoin  = 1 << 30
	ownWaited      = 1 << 29 // a flush bio of the commit the call waited for, given before as a journal bio's
	// ownCommitFlush: a flush of a jbd2 commit record attributed to the
	// call (OwnJournal: the latest fsync-family call on the device when
	// jbd2 queued it), not necessarily the commit the call needed.
	ownCommitFlush = 1 << 28
	// ownHidden: such a flush found not to have served the call. It is
	// left out of the call's record, but the call still waits for it, as
	// before: the commit's journal bios attributed to the call are issued
	// before its record's last flush completes, and a call released before
	// their issue leaves them to no call (unattributed, no_record).
	ownHidden = 1 << 27
)

// Bounds of the flush requests and journal commits kept for joins (the
// oldest are forgotten first; a call released meanwhile has its copy).
const (
	maxFlushReqs = 1024
	maxCommits   = 256
	maxJournals  = 1024
)

// flushKey names one run of a flush request: a hardware queue reuses its
// one flush request (struct request *) for every flush.
type flushKey struct{ rq, issueNs uint64 }

// flushReq is one flush request run and the calls' flush bios waiting for
// its completion.
type flushReq struct {
	bio  record.Bio // dev, rwbs, issue; complete, d2c, error once done
	done bool
	refs []*bioRef // flush bios of calls (held: refs++) until it is done
}

// flushReqs keeps the flush request runs and journal commits joins need.
type flushReqs struct {
	reqs    map[flushKey]*flushReq
	order   []flushKey            // reqs, oldest first
	commits map[uint64][]flushKey // jbd2 thread tid<<32 | its commit number -> the commit's flushes
	corder  []uint64
	// journals: per jbd2 thread, what outlives its commits (journalMem).
	journals map[uint32]*journalMem
}

// journalMem is what the engine keeps of one jbd2 thread's journal beyond
// its commits: its device, to keep a sync(2)'s joins of other journals when
// a commit of this one has no flush known (joinCommit); and the newest
// commit forgotten (a journal commits its transactions in order, oldest
// forgotten first) with its last flush's issue, to tell a commit forgotten
// from one never seen, and one forgotten while it mattered from one
// committed before the call that needed it began (forgottenCommit).
type journalMem struct {
	dev        string
	forgot     bool
	forgotTid  uint32
	forgotLast uint64
}

// journal returns jbd2 thread tid's journalMem, created on first use (as
// many as journals mounted: cleared past maxJournals, for tid reuse).
func (fs *flushReqs) journal(tid uint32) *journalMem {
	j := fs.journals[tid]
	if j == nil {
		if fs.journals == nil || len(fs.journals) >= maxJournals {
			fs.journals = map[uint32]*journalMem{}
		}
		j = &journalMem{}
		fs.journals[tid] = j
	}
	return j
}

// Bounded memory that forgot what a join needed (summary map_evictions,
// totals.go): FlushesForgotten, a flush request run forgotten while calls
// still waited for its completion (they are released as when it is never
// seen: at their record, completed before it, flushunseen.go) or sought by
// a commit's join after it was forgotten; CommitsForgotten, a commit a call
// needed or was woken by, forgotten before that event (the call keeps what
// it had: a wake's join or `unavailable`).

// forgetFlushReq counts a flush request run forgotten while calls waited for it.
func (e *Engine) forgetFlushReq(fr *flushReq) {
	if !fr.done && len(fr.refs) > 0 {
		e.counters.FlushesForgotten++
	}
	e.dropFlushRefs(fr)
}

// forgottenCommit says whether commit c of jbd2 thread tid, not in memory,
// was forgotten (not merely never seen: a commit of a FUA record, or
// before the trace) while a call that began at startNs could have waited
// for it: a commit no later than the newest forgotten has its flushes
// issued no later than that one's, and if those were before the call
// began, it was committed before the call (commitNeed drops such a
// commit's flushes anyway: nothing was lost). An fdatasync of a file
// overwritten in place needs the transaction that allocated its blocks,
// long committed: before, each such call in a trace of over 256 commits
// counted one.
func (fs *flushReqs) forgottenCommit(tid, c uint32, startNs uint64) bool {
	j := fs.journals[tid]
	return j != nil && j.forgot && int32(c-j.forgotTid) <= 0 && j.forgotLast >= startNs
}

// flushReqOf returns the run k of a flush request, created from ev.
func (e *Engine) flushReqOf(k flushKey, ev *bpf.IopathFlushDoneEv) *flushReq {
	fs := &e.flush.reqs
	if fr, ok := fs.reqs[k]; ok {
		return fr
	}
	if fs.reqs == nil {
		fs.reqs = map[flushKey]*flushReq{}
	}
	if len(fs.order) >= maxFlushReqs {
		old := fs.order[0]
		fs.order = append(fs.order[:0], fs.order[1:]...)
		if fr, ok := fs.reqs[old]; ok {
			delete(fs.reqs, old)
			e.forgetFlushReq(fr)
		}
	}
	fr := &flushReq{bio: record.Bio{Dev: e.devName(ev.Dev), IssueNs: k.issueNs, Rwbs: e.rwbsName(ev.FlushFlags), Kind: record.BioFlush}}
	fs.reqs[k] = fr
	fs.order = append(fs.order, k)
	return fr
}

// dropFlushRefs lets go of the calls' flush bios a flush request run held.
func (e *Engine) dropFlushRefs(fr *flushReq) {
	for _, b := range fr.refs {
		e.unref(b)
	}
	fr.refs = nil
}

// flushServes takes an OwnFlushServes event: flush request run (FlushRq,
// FlushIssueNs) serves the owned bio Bio.
func (e *Engine) flushServes(ev *bpf.IopathFlushDoneEv) {
	k := flushKey{ev.FlushRq, ev.FlushIssueNs}
	fr := e.flushReqOf(k, ev)
	if ev.OwnFlags&OwnCommitRec != 0 {
		e.commitFlush(commitKey(ev.Tid, ev.CommitTid), k)
	}
	if ev.OpId == 0 {
		return
	}
	var stands uint64
	if ev.Bytes == 0 && ev.OwnFlags&OwnJournal == 0 {
		stands = ev.Bio // the call's empty flush bio: never issued itself
	}
	var flags uint32
	if ev.OwnFlags&OwnCommitRec != 0 {
		flags = ownCommitFlush
	}
	e.giveFlush(e.op(ev.OpId, ev.QueueNs), ev.OpId, ev.Pid, fr, ev.QueueNs, stands, flags)
}

// giveFlush adds flush request run fr to call p's bios (once per run).
// stands is the call's bio the flush stands for (0: none, one more bio).
func (e *Engine) giveFlush(p *pendingOp, opID uint64, pid uint32, fr *flushReq, queueNs, stands uint64, flags uint32) {
	for _, b := range p.bios {
		if b.flags&ownFlushReq != 0 && b.IssueNs == fr.bio.IssueNs && b.Dev == fr.bio.Dev {
			if stands != 0 {
				if b.bioP == 0 {
					b.bioP = stands
				}
				b.flags &^= ownCommitFlush | ownHidden // it served the call's own flush bio too
			}
			if flags&ownCommitJoin != 0 {
				b.flags |= ownWaited // the call waited for it after all
				b.flags &^= ownHidden
			}
			return
		}
	}
	f := e.flushRef(fr.bio, opID, pid)
	f.flags |= flags
	f.bioP = stands
	f.QueueNs = queueNs
	f.done = fr.done
	if fr.done {
		f.Q2CNs = sub(f.CompleteNs, queueNs)
	} else {
		f.refs++
		fr.refs = append(fr.refs, f)
	}
	p.bios = append(p.bios, f)
}

// flushEnd takes an OwnFlushEnd event: a flush request run that served
// owned bios completed; its calls' flush bios get its device time.
func (e *Engine) flushEnd(ev *bpf.IopathFlushDoneEv) {
	fr := e.flushReqOf(flushKey{ev.FlushRq, ev.FlushIssueNs}, ev)
	fr.done = true
	fr.bio.CompleteNs = ev.FlushDoneNs
	fr.bio.D2CNs = sub(ev.FlushDoneNs, ev.FlushIssueNs)
	fr.bio.Error = kernel.BlkStatus(ev.FlushError)
	for _, b := range fr.refs {
		if !b.done {
			b.done = true
			b.CompleteNs, b.D2CNs, b.Error = fr.bio.CompleteNs, fr.bio.D2CNs, fr.bio.Error
			b.Q2CNs = sub(b.CompleteNs, b.QueueNs)
		}
	}
	e.releaseFlushRefs(fr)
}

// releaseFlushRefs lets go of a finished run's flush bios and releases the
// calls that waited only for them.
func (e *Engine) releaseFlushRefs(fr *flushReq) {
	refs := fr.refs
	fr.refs = nil
	for _, b := range refs {
		id := b.opID
		e.unref(b)
		if p, ok := e.ops[id]; ok {
			e.tryRelease(id, p)
		}
	}
}

// commitKey names a jbd2 commit: its thread and its transaction id
// (bpf/flush.c).
func commitKey(jbd2Tid, commit uint32) uint64 {
	return uint64(jbd2Tid)<<32 | uint64(commit)
}

// commitFlush remembers flush request run k as one of commit c's.
func (e *Engine) commitFlush(c uint64, k flushKey) {
	fs := &e.flush.reqs
	if fs.commits == nil {
		fs.commits = map[uint64][]flushKey{}
	}
	ks, ok := fs.commits[c]
	if !ok {
		if len(fs.corder) >= maxCommits {
			old := fs.corder[0]
			j := fs.journal(uint32(old >> 32))
			j.forgot, j.forgotTid, j.forgotLast = true, uint32(old), 0
			for _, k := range fs.commits[old] {
				j.forgotLast = max(j.forgotLast, k.issueNs)
			}
			delete(fs.commits, old)
			fs.corder = append(fs.corder[:0], fs.corder[1:]...)
		}
		fs.corder = append(fs.corder, c)
	}
	if fr, ok := fs.reqs[k]; ok {
		fs.journal(uint32(c >> 32)).dev = fr.bio.Dev
	}
	for _, have := range ks {
		if have == k {
			return
		}
	}
	fs.commits[c] = append(ks, k)
}

// commitWait takes an OwnCommitWait event: call OpId was woken by jbd2
// thread FlushTid after the end of the commit of transaction CommitTid. It
// gets the commit's flush requests; a call woken again after a later commit
// (it waited for a later transaction, and slept again) has the earlier
// commit's replaced. An OwnCommitNeed of the call overrides both.
// Still waiting at that commit's end, the call needed it or a later one:
// the flushes of earlier commits' records attributed to it
// (ownCommitFlush) go. A journal's commits run one after the other, so
// those are the ones issued before the commit's first flush. (8 threads
// fdatasyncing one file: ext4's transaction for the call is raced by the
// others' changes and not reported; 77 of 400 calls listed the commit
// before theirs beside their own.)
func (e *Engine) commitWait(ev *bpf.IopathFlushDoneEv) {
	p := e.op(ev.OpId, ev.DoneNs)
	if p.commitNeeded {
		return
	}
	ks := e.flush.reqs.commits[commitKey(ev.FlushTid, ev.CommitTid)]
	e.joinCommit(p, ev.OpId, ev.Pid, ev.FlushTid, ks)
	if len(ks) == 0 {
		if e.flush.reqs.forgottenCommit(ev.FlushTid, ev.CommitTid, 0) { // the wake came during the call
			e.counters.CommitsForgotten++
		}
		return
	}
	fr, ok := e.flush.reqs.reqs[ks[0]]
	if !ok {
		return
	}
	first := ks[0].issueNs
	for _, k := range ks {
		first = min(first, k.issueNs)
	}
	hideBios(p, func(b *bioRef) bool { return b.IssueNs < first && b.Dev == fr.bio.Dev })
}

// commitNeed takes an OwnCommitNeed event: ext4's fsync of call OpId
// (started at QueueNs) needed transaction CommitTid of jbd2 thread
// FlushTid's journal, committed by then (bpf/flush.c reports no other). The
// call gets that commit's flush requests in place of any wake's, unless
// the commit's last flush was issued before the call began: a transaction
// committed before the call, which the call did not wait for (it issued
// its own flush, or needed none). Either way, the flushes of another
// commit's record the call had as the device's latest caller
// (ownCommitFlush) go: they did not serve it (8 threads' appending
// fdatasyncs: 82 of 400 calls that needed transaction N+1 listed commit
// N's two flush requests beside N+1's), unless, with a need before the
// call, that commit's end woke the call.
func (e *Engine) commitNeed(ev *bpf.IopathFlushDoneEv) {
	ks := e.flush.reqs.commits[commitKey(ev.FlushTid, ev.CommitTid)]
	if len(ks) == 0 && e.flush.reqs.forgottenCommit(ev.FlushTid, ev.CommitTid, ev.QueueNs) {
		e.counters.CommitsForgotten++
	}
	var last uint64
	for _, k := range ks {
		last = max(last, k.issueNs)
	}
	if last < ev.QueueNs {
		// None seen (a FUA commit record, write through, before the
		// trace), or before the call. A commit whose end woke the call
		// stays: ext4's tid can miss a commit the call forced (data=journal:
		// writeback commits the journalled data, and i_sync_tid names an
		// earlier transaction).
		if p, ok := e.ops[ev.OpId]; ok {
			hideBios(p, func(b *bioRef) bool { return b.flags&ownWaited == 0 })
		}
		return
	}
	p := e.op(ev.OpId, ev.QueueNs)
	p.commitNeeded = true
	e.joinCommit(p, ev.OpId, ev.Pid, ev.FlushTid, ks)
	e.dropOtherCommits(p, ks)
}

// dropOtherCommits hides from call p's record the flushes of jbd2 commit
// records attributed to it (ownCommitFlush) that are not among ks, the
// flushes of the commit it needed.
func (e *Engine) dropOtherCommits(p *pendingOp, ks []flushKey) {
	hideBios(p, func(b *bioRef) bool {
		return !slices.ContainsFunc(ks, func(k flushKey) bool { return k.issueNs == b.IssueNs })
	})
}

// hideBios hides the flushes of commit records attributed to call p
// (ownCommitFlush) that hide selects: they leave its record (release),
// not its wait.
func hideBios(p *pendingOp, hide func(*bioRef) bool) {
	for _, b := range p.bios {
		if b.flags&ownCommitFlush != 0 && hide(b) {
			b.flags |= ownHidden
		}
	}
}

// hidden says whether b is a flush hidden from its call's record.
func hidden(b *bioRef) bool { return b.flags&(ownFlushReq|ownHidden) == ownFlushReq|ownHidden }

// dropBios removes the bios drop selects from call p's bios.
func (e *Engine) dropBios(p *pendingOp, drop func(*bioRef) bool) {
	kept := p.bios[:0]
	for _, b := range p.bios {
		if drop(b) {
			e.unref(b)
			continue
		}
		kept = append(kept, b)
	}
	clear(p.bios[len(kept):])
	p.bios = kept
}

// joinCommit gives call p the flush requests ks of the commit it waited
// for, in place of those of a commit of the same journal it was joined to
// before. A journal is told by its device: sync(2) waits for every
// journal's commit (ext4_sync_fs) and keeps one join per device. With no
// flush of the commit known (jbd2 thread jbd2's journal on a device with no
// volatile cache, or its flushes forgotten), the earlier joins of that
// journal's device go (the call waited for a later commit than those), as
// far as one of its commits named it; those of other journals stay. Before,
// every join went: a sync(2) woken by a journal on a write-through disk
// after one on a write-back disk lost the latter's flushes.
func (e *Engine) joinCommit(p *pendingOp, opID uint64, pid, jbd2 uint32, ks []flushKey) {
	var devs []string
	for _, k := range ks {
		if fr, ok := e.flush.reqs.reqs[k]; ok && !slices.Contains(devs, fr.bio.Dev) {
			devs = append(devs, fr.bio.Dev)
		}
	}
	if j := e.flush.reqs.journals[jbd2]; len(devs) == 0 && j != nil && j.dev != "" {
		devs = append(devs, j.dev)
	}
	e.dropBios(p, func(b *bioRef) bool {
		return b.flags&ownCommitJoin != 0 && slices.Contains(devs, b.Dev)
	})
	for _, k := range ks {
		if fr, ok := e.flush.reqs.reqs[k]; ok {
			e.giveFlush(p, opID, pid, fr, fr.bio.IssueNs, 0, ownCommitJoin)
		} else {
			e.counters.FlushesForgotten++
		}
	}
}
