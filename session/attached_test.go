package session

import (
	"strings"
	"testing"

	"github.com/iopath/iopath/tracer"
)

func TestForceWarnings(t *testing.T) {
	hooks := []tracer.HookStatus{
		{Hook: "vfs_read", Mechanism: tracer.TPBTF, Rejected: []string{"fentry: EPERM", "kprobe: kprobes unavailable"}},
		{Hook: "block_rq_issue", Mechanism: tracer.TPBTF},
		{Hook: "page_cache_add", Mechanism: tracer.Tracepoint},
	}
	w := forceWarnings(map[string]tracer.Mechanism{"vfs_read": tracer.Kprobe, "page_cache_add": tracer.Tracepoint}, hooks)
	if len(w) != 1 || !strings.Contains(w[0], "vfs_read=kprobe not used (kprobe: kprobes unavailable)") {
		t.Fatalf("one hook refused: %q", w)
	}
	w = forceWarnings(map[string]tracer.Mechanism{"*": tracer.Tracepoint}, hooks)
	if len(w) != 1 || !strings.Contains(w[0], "2 hooks cannot use it") || !strings.Contains(w[0], "block_rq_issue=tp_btf") {
		t.Fatalf("all hooks forced: %q", w)
	}
	if w = forceWarnings(map[string]tracer.Mechanism{}, hooks); len(w) != 0 {
		t.Fatalf("nothing forced: %q", w)
	}
}

// A hook dropped because the verifier refused its program says so in the
// "unavailable" line, with the verifier's reason (a bug report's evidence);
// a hook the kernel lacks says only what is lost.
func TestAttachLineVerifierRefused(t *testing.T) {
	hooks := []tracer.HookStatus{
		{Hook: "journal_need", Mechanism: tracer.None, Loses: "exact jbd2 commits",
			Rejected: []string{"tp_btf: the verifier refused tp_ext4_sync_file_exit: R6 pointer arithmetic on trusted_ptr_or_null_ prohibited"}},
		{Hook: "aio_iocb", Mechanism: tracer.None, Loses: "exact iocb starts", Rejected: []string{"fentry: not in BTF"}},
		{Hook: "block_rq_complete", Mechanism: tracer.TPBTF},
	}
	got := attachLine(hooks)
	want := "iopath: attached journal_need=none aio_iocb=none block_rq_complete=tp_btf\n" +
		"iopath: unavailable on this kernel: journal_need (no exact jbd2 commits; tp_btf: the verifier refused tp_ext4_sync_file_exit: R6 pointer arithmetic on trusted_ptr_or_null_ prohibited), aio_iocb (no exact iocb starts)"
	if got != want {
		t.Errorf("attach line\n%s\nwant\n%s", got, want)
	}
}
