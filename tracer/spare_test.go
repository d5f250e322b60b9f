package tracer

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cilium/ebpf/btf"
	"github.com/iopath/iopath/bpf"
	"github.com/iopath/iopath/internal/testutil"
	"github.com/iopath/iopath/record"
)

// The spare system-call programs (spare.go) stand in for a primary whose
// runs the kernel skips, and only then. A kernel that skips them (7.2 under
// load) cannot be made to on demand, so the primaries are replaced by
// programs that do nothing, which is what a skipped run does: with the
// spares attached every dd read still has its record, each one handled by
// a spare (spare_enter, spare_exit); with real primaries and the spares
// attached the spares handle none and nothing is recorded twice.
func TestSpareTakesSkippedRuns(t *testing.T) {
	testutil.NeedRoot(t)
	// Before 6.2 (the 5.10 and 6.1 VMs) raw_sys_* are their probe builds,
	// which have no spares: said before a whole load (~15 s under TCG).
	if kspec, err := btf.LoadKernelSpec(); err == nil && !hasKfunc(kspec, "bpf_rdonly_cast") {
		t.Skip("no spares of raw_sys_enter/raw_sys_exit on this kernel (no bpf_rdonly_cast)")
	}
	file := filepath.Join(testutil.DiskDir(t), "spare")
	if err := os.WriteFile(file, make([]byte, 16<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	const reads = 16 // dd bs=1k count=16: 16 reads of 1 KiB
	for _, tc := range []struct {
		name string
		noop []string
		// want: runs the spares did in place of the primary, at least
		// (other dd system calls of the traced kinds add some: its
		// writes to /dev/null)
		spared bool
	}{
		{"primaries skipped", []string{bpf.IopathProgRawSysEnter, bpf.IopathProgRawSysExit}, true},
		{"exit skipped", []string{bpf.IopathProgRawSysExit}, true},
		{"primaries ran", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, records := ddTracer(t, Options{Comm: "dd", All: true, noopProgs: tc.noop, Force: map[string]Mechanism{"vfs_read": TPBTF}}, file)
			if !slices.ContainsFunc(tr.spares.loaded, func(s spareOf) bool { return slices.Contains(s.spares, bpf.IopathProgRawSysExitSpare) }) {
				// Before 6.2 (the 6.1 VM) raw_sys_* are their probe builds,
				// which have no spares.
				t.Skip("no spares of raw_sys_enter/raw_sys_exit on this kernel (no bpf_rdonly_cast)")
			}
			runWithSpares(t, tr, "if="+file, "of=/dev/null", "bs=1k", "count=16")
			c := tr.Counters()
			got := records()
			n := 0
			for _, r := range got {
				if r.Syscall == "read" && r.ReturnedBytes == 1024 {
					n++
				}
			}
			t.Logf("%d read records of %s, %d records in all; spare_sys_enter %d spare_sys_exit %d", n, file, len(got), c["spare_sys_enter"], c["spare_sys_exit"])
			if n != reads || len(got) != reads {
				t.Errorf("%d 1 KiB read records (%d records of the file), want %d", n, len(got), reads)
			}
			switch {
			case tc.spared && c["spare_sys_exit"] < reads:
				t.Errorf("spare_sys_exit %d, want ≥ %d (every read's exit)", c["spare_sys_exit"], reads)
			case tc.spared && len(tc.noop) == 2 && c["spare_sys_enter"] < reads:
				t.Errorf("spare_sys_enter %d, want ≥ %d (every read's entry)", c["spare_sys_enter"], reads)
			case tc.spared && len(tc.noop) == 1 && c["spare_sys_enter"] != 0:
				t.Errorf("spare_sys_enter %d with the entry primary running, want 0", c["spare_sys_enter"])
			case !tc.spared && (c["spare_sys_enter"] != 0 || c["spare_sys_exit"] != 0):
				t.Errorf("spares ran in place of running primaries: spare_sys_enter %d spare_sys_exit %d, want 0", c["spare_sys_enter"], c["spare_sys_exit"])
			}
		})
	}
}

// The second spares (bpf/spare.h SPARE2) of the block programs act when
// the primary and the first spare both skipped an event (several threads
// preempted inside them on one CPU), and never while either ran. As in
// TestSpareTakesSkippedRuns, a skipped copy is one that does nothing: 16
// O_DIRECT reads by dd, each one bio, must keep their bios queued and
// issued (queue_ns, issue_ns, d2c_ns) whichever copy handled them.
func TestSecondSpareTakesSkippedRuns(t *testing.T) {
	testutil.NeedRoot(t)
	// Before 5.11 (the 5.10 VM) the block programs are the (q, ...) ones,
	// which have no spares: said before a whole load (~17 s under TCG).
	var td *btf.Typedef
	if kspec, err := btf.LoadKernelSpec(); err == nil && kspec.TypeByName("btf_trace_block_rq_issue", &td) == nil {
		if fp, ok := btf.UnderlyingType(td).(*btf.Pointer); ok {
			if proto, ok := fp.Target.(*btf.FuncProto); ok && len(proto.Params) != 2 {
				t.Skip("block_rq_issue(q, rq): no spares of the block programs on this kernel")
			}
		}
	}
	file := filepath.Join(testutil.DiskDir(t), "spare2")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	// Written back now: a dirty page would be written inside dd's first
	// O_DIRECT read, a second bio of that call.
	if _, err := f.Write(make([]byte, 64<<10)); err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(f.Sync(), f.Close()); err != nil {
		t.Fatal(err)
	}
	const reads = 16 // dd bs=4k count=16 iflag=direct: 16 reads, a bio each
	for _, tc := range []struct {
		name string
		noop []string
		// spared: every read's bio queued and issued by a spare
		spared bool
	}{
		{"primary and first spare skipped", []string{bpf.IopathProgTpBlockBioQueue, bpf.IopathProgTpBlockBioQueueSpare,
			bpf.IopathProgTpBlockRqIssue, bpf.IopathProgTpBlockRqIssueSpare}, true},
		{"first spare skipped", []string{bpf.IopathProgTpBlockBioQueueSpare, bpf.IopathProgTpBlockRqIssueSpare}, false},
		{"none skipped", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, records := ddTracer(t, Options{Comm: "dd", All: true, noopProgs: tc.noop}, file)
			if !slices.ContainsFunc(tr.spares.loaded, func(s spareOf) bool { return len(s.spares) == 2 && s.primary == bpf.IopathProgTpBlockRqIssue }) ||
				!slices.ContainsFunc(tr.spares.loaded, func(s spareOf) bool { return len(s.spares) == 2 && s.primary == bpf.IopathProgTpBlockBioQueue }) {
				// Before 5.11 the block programs are the (q, ...) ones,
				// which have no spares.
				t.Skip("no spares of tp_block_bio_queue/tp_block_rq_issue on this kernel")
			}
			runWithSpares(t, tr, "if="+file, "of=/dev/null", "bs=4k", "count=16", "iflag=direct")
			c := tr.Counters()
			got := slices.DeleteFunc(records(), func(r *record.Syscall) bool { return r.Syscall != "read" })
			whole := 0
			for _, r := range got {
				if r.ReturnedBytes == 4096 && len(r.Bios) == 1 && r.Bios[0].Bytes == 4096 &&
					r.Bios[0].QueueNs > 0 && r.Bios[0].IssueNs > 0 && r.Bios[0].D2CNs > 0 {
					whole++
				} else {
					t.Logf("not whole: offset %d returned %d, bios %+v", r.Offset, r.ReturnedBytes, r.Bios)
				}
			}
			t.Logf("%d of %d read records with their bio queued, issued and completed; spare_bio_queue %d spare_rq_issue %d",
				whole, len(got), c["spare_bio_queue"], c["spare_rq_issue"])
			if whole != reads || len(got) != reads {
				t.Errorf("%d 4 KiB reads with one whole bio (%d read records of the file), want %d", whole, len(got), reads)
			}
			switch {
			case tc.spared && (c["spare_bio_queue"] < reads || c["spare_rq_issue"] < reads):
				t.Errorf("spare_bio_queue %d spare_rq_issue %d, want ≥ %d each (every read's bio)", c["spare_bio_queue"], c["spare_rq_issue"], reads)
			case !tc.spared && (c["spare_bio_queue"] != 0 || c["spare_rq_issue"] != 0):
				t.Errorf("spares ran in place of a running primary: spare_bio_queue %d spare_rq_issue %d, want 0", c["spare_bio_queue"], c["spare_rq_issue"])
			}
		})
	}
}

// The preemption model that attaches the spares at start: debugfs's
// current mode of a PREEMPT_DYNAMIC kernel, else the configuration's.
func TestPreemptModel(t *testing.T) {
	for _, tc := range []struct{ dyn, want string }{
		{"none voluntary full (lazy)\n", "lazy"}, // Debian 7.2
		{"(none) voluntary full lazy\n", "none"}, // this machine's 6.18, were debugfs mounted
		{"none (voluntary) full\n", "voluntary"},
		{"", ""},
	} {
		if got := dynamicModel(tc.dyn); got != tc.want {
			t.Errorf("dynamicModel(%q) = %q, want %q", tc.dyn, got, tc.want)
		}
	}
	for _, tc := range []struct {
		cfg  map[string]string
		want string
	}{
		// this machine's 6.18: CONFIG_PREEMPTION (the dynamic build) is no model
		{map[string]string{"CONFIG_PREEMPT_NONE": "y", "CONFIG_PREEMPTION": "y", "CONFIG_PREEMPT_DYNAMIC": "y", "CONFIG_PREEMPT_BUILD": "y"}, "none"},
		{map[string]string{"CONFIG_PREEMPT_LAZY": "y", "CONFIG_PREEMPT_DYNAMIC": "y"}, "lazy"},
		{map[string]string{"CONFIG_PREEMPT_VOLUNTARY": "y"}, "voluntary"},
		{map[string]string{"CONFIG_PREEMPT": "y"}, "full"},
		{map[string]string{"CONFIG_PREEMPT_RT": "y", "CONFIG_PREEMPT": "y"}, "rt"},
		{nil, ""},
	} {
		if got := configModel(tc.cfg); got != tc.want {
			t.Errorf("configModel(%v) = %q, want %q", tc.cfg, got, tc.want)
		}
		if got := preempts(configModel(tc.cfg)); got != (tc.want == "full" || tc.want == "lazy" || tc.want == "rt") {
			t.Errorf("preempts(%q) = %v", tc.want, got)
		}
	}
}

// missed_runs of a primary with a spare: its skips less the spare's
// takeovers, never going down (iopath_missed_runs_total is a counter: a
// scrape between a skip and its takeover saw one more than the next).
func TestLostRuns(t *testing.T) {
	for _, tc := range []struct{ skipped, took, prev, want uint64 }{
		{10, 0, 0, 10},
		{10, 10, 0, 0},
		{10, 9, 0, 1},
		{11, 10, 1, 1}, // a skip whose takeover is not counted yet...
		{11, 11, 1, 1}, // ...and once it is: not back to 0
		{5, 9, 0, 0},   // takeovers counted beyond the skips read before them
	} {
		if got := lostRuns(tc.skipped, tc.took, tc.prev); got != tc.want {
			t.Errorf("lostRuns(%d, %d, %d) = %d, want %d", tc.skipped, tc.took, tc.prev, got, tc.want)
		}
	}
}

// runWithSpares attaches tr's spare programs, runs tr while dd runs with
// args, and stops it.
func runWithSpares(t *testing.T, tr *Tracer, args ...string) {
	t.Helper()
	if err := tr.attachSpares("in the test"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- tr.Run(ctx, 2*time.Second) }()
	if out, err := exec.Command("dd", args...).CombinedOutput(); err != nil {
		cancel()
		<-ran
		t.Fatalf("dd: %v\n%s", err, out)
	}
	cancel()
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
}

// ddTracer loads a tracer with opts (closed at the test's end) whose
// records of file's system calls the returned function gives.
func ddTracer(t *testing.T, opts Options, file string) (*Tracer, func() []*record.Syscall) {
	t.Helper()
	var mu sync.Mutex
	var got []*record.Syscall
	tr, err := New(opts, func(r any) {
		if c, ok := r.(*record.Syscall); ok && c.Path == file {
			mu.Lock()
			got = append(got, c)
			mu.Unlock()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return tr, func() []*record.Syscall {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got)
	}
}
