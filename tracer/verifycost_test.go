package tracer

import (
	"testing"

	"github.com/iopath/iopath/internal/testutil"
)

// verifyBudget is the most instructions the kernel's verifier may process
// for all the programs one trace loads, per build. The verifier is most of
// iopath's start-up (and of every trace start in the TCG VMs of make
// vmtest, where it runs ~40 times slower). Measured on 6.18 (2026-12-08):
// main 119,134 and compat 129,639; before, 431,886 and 1,894,240 (a loop
// over 16 iocbs the verifier could not prune inside, raw_sys_exit; the
// compat build's inlined dentry, flush-list, writeback and aio walks).
var verifyBudget = map[bool]uint64{false: 200_000, true: 200_000}

// TestVerificationBudget loads what `iopath trace` loads, in the build this
// kernel gets and in the compat build, and fails when the verifier processed
// more instructions than the budget: a program whose verification cost
// exploded (raw_sys_exit went from 24 k to 355 k unnoticed, 1.7 s of
// start-up on 6.18). Kernels that do not report the count (before 5.16)
// skip.
func TestVerificationBudget(t *testing.T) {
	testutil.NeedRoot(t)
	for _, compat := range []bool{false, true} {
		name := map[bool]string{false: "main", true: "compat"}[compat]
		t.Run(name, func(t *testing.T) {
			if compat {
				t.Setenv("IOPATH_COMPAT", "1")
			}
			tr, err := New(Options{}, func(any) {})
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			if !compat && len(tr.Compat) > 0 {
				t.Skipf("this kernel loads the compat build (%v): the compat subtest measures it", tr.Compat)
			}
			var total uint64
			var top string
			var topN uint32
			for pname, p := range tr.coll.Programs {
				n, ok := programVerified(p)
				if !ok {
					t.Skip("the kernel does not report verified instructions (5.16+)")
				}
				total += uint64(n)
				if n > topN {
					top, topN = pname, n
				}
			}
			t.Logf("%s build: %d programs, %d instructions verified (largest: %s, %d)", name, len(tr.coll.Programs), total, top, topN)
			if total > verifyBudget[compat] {
				t.Errorf("%d instructions verified, budget %d (largest: %s, %d; IOPATH_VERIFIER_LOG=%s shows where they go)",
					total, verifyBudget[compat], top, topN, top)
			}
		})
	}
}
