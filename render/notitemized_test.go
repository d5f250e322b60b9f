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

// The not-itemized lines are capped like the file tables (--files): most
// calls first, the rest summed per direction in one line (1500 forked
// readers with a full hit_stats printed 1501 lines here).
func TestSummaryTextNotItemizedCapped(t *testing.T) {
	s := &record.Summary{HitsNotItemized: []record.HitsNotItemized{
		{Pid: 101, Comm: "a", Calls: 3, BytesRequested: 300, Pages: 3},
		{Pid: 102, Comm: "b", Calls: 50, BytesRequested: 5000, Pages: 50},
		{Pid: 103, Comm: "c", Calls: 4, BytesRequested: 400, Pages: 4},
		{Pid: 104, Comm: "d", Calls: 2, BytesRequested: 200, Pages: 2},
		{Pid: 105, Comm: "e", Write: true, Calls: 1, BytesRequested: 10, Pages: 1},
	}}
	got := SummaryText(s, 2)
	if n := strings.Count(got, "not itemized per file ("); n != 4 {
		t.Errorf("%d not-itemized lines, want 2 shown + 1 read sum + 1 write sum:\n%s", n, got)
	}
	for _, want := range []string{
		"50 cached read calls, 4.9 KiB requested, 50 pages, counted in the totals of pid 102 (b)\n",
		"4 cached read calls, 400 B requested, 4 pages, counted in the totals of pid 103 (c)\n",
		"5 cached read calls, 500 B requested, 5 pages, counted in their processes' totals (2 more lines summed: --files 0 lists each, the JSON summary always does)\n",
		"1 cached write call, 10 B requested, 1 page, counted in their processes' totals (1 more line summed",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("summary text lacks %q:\n%s", want, got)
		}
	}
	if all := SummaryText(s, 0); strings.Count(all, "not itemized per file (") != 5 {
		t.Errorf("--files 0 does not list every line:\n%s", all)
	}
}
