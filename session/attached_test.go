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
