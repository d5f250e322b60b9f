package aggregate

import (
	"testing"

	"github.com/cilium/ebpf"
	"github.com/iopath/iopath/bpf"
	"github.com/iopath/iopath/internal/testutil"
)

// aggMaps creates the maps of bpf/agg.h from the committed object's specs
// (no program is loaded).
func aggMaps(t *testing.T) Maps {
	t.Helper()
	spec, err := bpf.LoadIopath()
	if err != nil {
		t.Fatal(err)
	}
	mk := func(name string) *ebpf.Map {
		ms := spec.Maps[name].Copy()
		ms.Pinning = ebpf.PinNone
		m, err := ebpf.NewMap(ms)
		if err != nil {
			t.Fatalf("creating %s: %v", name, err)
		}
		t.Cleanup(func() { m.Close() })
		return m
	}
	return Maps{Procs: mk(bpf.IopathMapAggProcs), Files: mk(bpf.IopathMapAggFiles), Other: mk(bpf.IopathMapAggOther),
		Devs: mk(bpf.IopathMapAggDevs), Global: mk(bpf.IopathMapAggG), Rqs: mk(bpf.IopathMapAggRqs)}
}

func aggIO(comm string, part uint32, reads uint64) *bpf.IopathAggIo {
	v := &bpf.IopathAggIo{Segments: part}
	v.Calls[Read] = reads
	v.Bytes[Read] = reads
	for i := range len(comm) {
		v.Name[i] = int8(comm[i])
	}
	return v
}

// TestReadExitedAfterIteration: a process the iteration read as "sh",
// which then exec'ed cat, read with it and exited before the liveness
// check (a busy one-CPU VM; seen as TestTopExec on 5.10): the entry the
// reader deletes holds cat's calls, so they must be what the snapshot and
// the retired totals count — before the fix they were deleted unread, and
// cat had no row.
func TestReadExitedAfterIteration(t *testing.T) {
	testutil.NeedRoot(t)
	m := aggMaps(t)
	const pid = 1273
	if err := m.Procs.Put(uint32(pid), aggIO("sh", 0, 11)); err != nil {
		t.Fatal(err)
	}
	r := NewReader(m)
	r.alive = func(p uint32) bool {
		if p != pid {
			return true
		}
		// Between the iteration's read and this check: the exec ends
		// sh's part (an ended key), cat reads twice and exits.
		if err := m.Procs.Put(EndedKey(pid, 0), aggIO("sh", 0, 11)); err != nil {
			t.Fatal(err)
		}
		if err := m.Procs.Put(uint32(pid), aggIO("cat", 1, 2)); err != nil {
			t.Fatal(err)
		}
		return false
	}
	s, err := r.Read()
	if err != nil {
		t.Fatal(err)
	}
	p := s.Procs[pid]
	if p == nil || p.Comm != "cat" || p.Calls[Read] != 2 || !p.Exited || p.Part != 1 {
		t.Fatalf("pid %d: %+v, want cat's part 1 with its 2 reads, exited", pid, p)
	}
	// The ended part, inserted behind the iteration, is read in the same
	// snapshot (Delta then subtracts the live entry's previous value from
	// it): the retired total is both parts, nothing lost, nothing twice.
	if e := s.Procs[EndedKey(pid, 0)]; e == nil || e.Comm != "sh" || e.Calls[Read] != 11 {
		t.Errorf("sh's ended part: %+v, want it in the same snapshot with 11 reads", e)
	}
	for i := range 2 {
		if got := s.Retired.Calls[Read]; got != 13 {
			t.Errorf("read %d: retired reads %d, want sh's 11 + cat's 2", i+1, got)
		}
		if c := s.RetiredByComm["cat"]; c == nil || c.Calls[Read] != 2 {
			t.Errorf("read %d: retired under cat: %+v, want 2 reads", i+1, c)
		}
		if s, err = r.Read(); err != nil {
			t.Fatal(err)
		}
	}
	var k uint32
	var v bpf.IopathAggIo
	if it := m.Procs.Iterate(); it.Next(&k, &v) {
		t.Errorf("agg_procs still holds key %#x after both reads", k)
	}
}
