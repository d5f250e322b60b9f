package render

import (
	"strings"
	"testing"

	"github.com/iopath/iopath/record"
)

// Lookups that found the mmap lock taken count every user fault, anonymous
// ones included: where mm_filemap_fault (tp_btf) opens every file fault
// that reads, the rest are no missing IO and get no INCOMPLETE line (a
// program touching 50,000 anonymous pages beside an mmap/munmap loop was
// told "INCOMPLETE: 17646 page faults not traced ... missing from faults
// and major_faults"). Without that hook they are really unknown.
func TestSummaryTextVMABusy(t *testing.T) {
	s := &record.Summary{Attach: map[string]string{"filemap_fault": "tp_btf"},
		Diagnostics: map[string]uint64{"faults_vma_busy": 17646, "faults_vma_recovered": 0}}
	got := SummaryText(s, DefaultFileRows)
	if strings.Contains(got, "INCOMPLETE") || strings.Contains(got, "major_faults") {
		t.Errorf("with mm_filemap_fault hooked, busy lookups are called missing faults:\n%s", got)
	}
	want := "faults whose mapping was looked up while another thread held the mmap lock: 17646 (faults_vma_busy: any mapping, anonymous ones included); 0 reached filemap_fault and are traced (faults_vma_recovered); the other 17646 read no file"
	if !strings.Contains(got, want) {
		t.Errorf("summary text lacks %q:\n%s", want, got)
	}
	s = &record.Summary{Attach: map[string]string{"filemap_fault": "fentry"},
		Diagnostics: map[string]uint64{"faults_vma_busy": 12}}
	got = SummaryText(s, DefaultFileRows)
	want = "INCOMPLETE: 12 faults were looked up while another thread held the mmap lock (faults_vma_busy: any mapping, anonymous ones included), and this kernel has no mm_filemap_fault tracepoint"
	if !strings.Contains(got, want) {
		t.Errorf("summary text lacks %q:\n%s", want, got)
	}
}

// Faults whose end was never seen (faults_unended) have no records and are
// in no faults count: the text says so (before, only the JSON summary's
// diagnostics had the number; a 4-thread mmap reader under a 20 µs itimer
// left 39).
func TestSummaryTextFaultsUnended(t *testing.T) {
	s := &record.Summary{Diagnostics: map[string]uint64{"faults_unended": 39}}
	got := SummaryText(s, DefaultFileRows)
	want := "faults with no end seen: 39 (faults_unended: "
	if !strings.Contains(got, want) {
		t.Errorf("summary text lacks %q:\n%s", want, got)
	}
	s.Diagnostics["faults_unended"] = 0
	if got := SummaryText(s, DefaultFileRows); strings.Contains(got, "no end seen") {
		t.Errorf("a line for 0 unended faults:\n%s", got)
	}
}

// The kernel's files behind shared anonymous memory are named so (a DBA
// saw 9174 faults on ".../dev/zero" for PostgreSQL's shared_buffers).
func TestSharedAnonName(t *testing.T) {
	for path, want := range map[string]bool{
		".../dev/zero": true, "…/dev/zero": true, "SYSV0052e2c1": true, ".../SYSV0052e2c1": true,
		"/dev/zero": false, "/tmp/dev/zero2": false, "/tmp/SYSVx": false, "/var/lib/data.db": false,
	} {
		if got := sharedAnon(path); got != want {
			t.Errorf("sharedAnon(%q) = %v, want %v", path, got, want)
		}
	}
}
