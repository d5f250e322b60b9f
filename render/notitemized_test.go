package render

import (
	"strings"
	"testing"

	"github.com/iopath/iopath/record"
)

// The text summary says which cached calls the kernel could not itemize
// per file (issue 10 item 3), and where they are counted.
func TestSummaryTextNotItemized(t *testing.T) {
	s := &record.Summary{Pids: []record.PidSummary{{Pid: 100, Comm: "reader"}},
		HitsNotItemized: []record.HitsNotItemized{
			{Pid: 100, Comm: "reader", Calls: 1001, BytesRequested: 1001, BytesReturned: 1001, Pages: 1001},
			{Pid: 0, Write: true, Calls: 1, BytesRequested: 4096, Pages: 1},
		}}
	got := SummaryText(s, DefaultFileRows)
	for _, want := range []string{
		"not itemized per file (hit_stats map full): 1001 cached read calls, 1001 B requested, 1001 pages, counted in the totals of pid 100 (reader)\n",
		"not itemized per file (hit_stats map full): 1 cached write call, 4.0 KiB requested, 1 page, counted in no process (hit_other full too)\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("summary text lacks %q:\n%s", want, got)
		}
	}
}

// A refused insert with room left (-ENOMEM) is not called a full map
// (hit_stats once refused at ~3757 of 16384 entries and said "map full").
func TestSummaryTextHitsNoMemory(t *testing.T) {
	s := &record.Summary{MapEvictions: map[string]uint64{"hit_stats": 0, "hit_stats_nomem": 12},
		HitsNotItemized: []record.HitsNotItemized{{Pid: 100, Comm: "reader", Calls: 12, BytesRequested: 12, Pages: 12}}}
	got := SummaryText(s, DefaultFileRows)
	for _, want := range []string{
		"not itemized per file (hit_stats could not allocate 12 of its entries with room left: not preallocated): 12 cached read calls",
		"hit maps full, no hit lost (\"not itemized per file\" above): hit_stats failed to allocate with room left 12 times: the cache hits of files it had no room for are exact in their process's totals, only not itemized per file\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("summary text lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "data lost") {
		t.Errorf("hits counted in the totals called lost:\n%s", got)
	}
	if strings.Contains(got, "map full)") {
		t.Errorf("a failed allocation called a full map:\n%s", got)
	}
}

// A tmpfs write's story says it is a memory-only write, never a hit.
func TestStoryMemoryOnlyWrite(t *testing.T) {
	r := &record.Syscall{Syscall: "write", Path: "/dev/shm/x", FS: "tmpfs", RequestedBytes: 1, ReturnedBytes: 1,
		MemoryOnly: true, Cache: record.Cache{PagesRequested: 1}}
	got := SyscallStory(r)
	if !strings.Contains(got, "  memory-only write: 1 page of tmpfs memory (not a cache of a disk: neither hit nor miss)\n") ||
		strings.Contains(got, " hit,") || !strings.Contains(got, "never written back") {
		t.Errorf("tmpfs write story:\n%s", got)
	}
}
