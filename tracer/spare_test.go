package tracer

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

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
			var mu sync.Mutex
			var got []*record.Syscall
			tr, err := New(Options{Comm: "dd", All: true, noopProgs: tc.noop, Force: map[string]Mechanism{"vfs_read": TPBTF}}, func(r any) {
				if c, ok := r.(*record.Syscall); ok && c.Path == file {
					mu.Lock()
					got = append(got, c)
					mu.Unlock()
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			if !slices.ContainsFunc(tr.spares.loaded, func(s spareOf) bool { return s.spare == bpf.IopathProgRawSysExitSpare }) {
				// Before 6.2 (the 6.1 VM) raw_sys_* are their probe builds,
				// which have no spares.
				t.Skip("no spares of raw_sys_enter/raw_sys_exit on this kernel (no bpf_rdonly_cast)")
			}
			if err := tr.attachSpares("in the test"); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			ran := make(chan error, 1)
			go func() { ran <- tr.Run(ctx, 2*time.Second) }()
			if out, err := exec.Command("dd", "if="+file, "of=/dev/null", "bs=1k", "count=16").CombinedOutput(); err != nil {
				t.Fatalf("dd: %v\n%s", err, out)
			}
			cancel()
			if err := <-ran; err != nil {
				t.Fatal(err)
			}
			c := tr.Counters()
			mu.Lock()
			defer mu.Unlock()
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
