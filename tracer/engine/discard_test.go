package engine_test

import (
	"strings"
	"testing"

	"github.com/iopath/iopath/render"
	"github.com/iopath/iopath/tracer/engine/enginetest"
)

// An online discard (ext4 mounted with -o discard frees blocks in unlink or
// truncate) queued outside any traced call is an unattributed bio labelled
// as a discard, and its bytes (the range discarded) are no data written:
// not in the process's disk write bytes, and apart from the read/written
// bytes in the text summary.
func TestUnattributedDiscard(t *testing.T) {
	s := enginetest.NewStream()
	const discard = 3               // REQ_OP_DISCARD
	unlink := uint32(3<<8 | 87<<16) // CAUSE_SYSCALL, unlink(2)
	meta := uint32(2 << 8)          // CAUSE_META
	s.E.HandleIssue(enginetest.Issue(0xa, 100, discard, enginetest.Own{Bio: 0xb1, Sector: 8000, Bytes: 8 << 20, Queue: 90, Flags: unlink, Pid: 100}))
	s.E.HandleComplete(enginetest.Done(0xa, 200, 0))
	s.E.HandleIssue(enginetest.Issue(0xb, 300, enginetest.FlWrite|1<<12, enginetest.Own{Bio: 0xb2, Sector: 80, Bytes: 4096, Queue: 290, Flags: meta, Pid: 100}))
	s.E.HandleComplete(enginetest.Done(0xb, 400, 0))
	sum := s.E.Summary()
	if c := sum.UnattributedCauses["discard:syscall:unlink"]; c.Bios != 1 || c.Bytes != 8<<20 {
		t.Errorf("causes %+v: want discard:syscall:unlink 1 bio of 8 MiB", sum.UnattributedCauses)
	}
	if _, ok := sum.UnattributedCauses["syscall:unlink"]; ok {
		t.Errorf("the discard counted as data: %+v", sum.UnattributedCauses)
	}
	for _, p := range sum.Pids {
		if p.Pid == 100 && p.DiskBytesWrite != 4096 {
			t.Errorf("pid 100 disk bytes written %d, want the metadata write's 4096 only", p.DiskBytesWrite)
		}
	}
	text := render.SummaryText(sum, render.DefaultFileRows)
	if want := "4.0 KiB read or written, 8.0 MiB discarded: discard:syscall:unlink 1 (8.0 MiB discarded), metadata 1 (4.0 KiB)"; !strings.Contains(text, want) {
		t.Errorf("summary text has no %q:\n%s", want, text)
	}
}
