package tracer

import (
	"errors"
	"strings"
	"testing"

	"github.com/iopath/iopath/bpf"
	"github.com/iopath/iopath/internal/testutil"
)

// A program of an optional hook that this kernel's verifier refuses makes
// that hook none, with the verifier's reason, and the rest loads: on the
// 6.12 and 7.2 VMs a maybe-NULL tracepoint argument's field address
// (journal_need, journal_commit) failed the whole run ("the kernel's
// verifier rejected program NAME") although the probe had accepted the hooks
// (BTF and stand-in programs only). A required hook's refused program
// still fails the run, saying so.
func TestVerifierRejectsOptionalHook(t *testing.T) {
	testutil.NeedRoot(t)
	status := func(tr *Tracer, hook string) HookStatus {
		for _, s := range tr.Hooks {
			if s.Hook == hook {
				return s
			}
		}
		t.Fatalf("no status of hook %s", hook)
		return HookStatus{}
	}
	// block_rq_requeue: optional, one program of its own, on every kernel
	// (journal_need, which failed so, is none on 5.10 anyway).
	tr, err := New(Options{rejectProgs: []string{bpf.IopathProgTpBlockRqRequeue}}, func(any) {})
	if err != nil {
		t.Fatalf("New with block_rq_requeue's program refused: %v", err)
	}
	defer tr.Close()
	if s := status(tr, "block_rq_requeue"); s.Mechanism != None || len(s.Rejected) == 0 || !strings.Contains(s.Rejected[len(s.Rejected)-1], "the verifier refused "+bpf.IopathProgTpBlockRqRequeue) {
		t.Errorf("block_rq_requeue: %+v, want none, rejected by the verifier", s)
	}
	if _, ok := tr.coll.Programs[bpf.IopathProgTpBlockRqRequeue]; ok {
		t.Error("the refused program is loaded")
	}
	if len(tr.coll.Programs) == 0 || tr.coll.Programs[bpf.IopathProgTpBlockRqComplete] == nil {
		t.Errorf("the other programs did not load: %d loaded", len(tr.coll.Programs))
	}
	_, err = New(Options{rejectProgs: []string{bpf.IopathProgTpBlockRqComplete}}, func(any) {})
	if err == nil || !strings.Contains(err.Error(), "verifier rejected program "+bpf.IopathProgTpBlockRqComplete+": ") {
		t.Errorf("a required hook's program refused: %v, want the verifier's error", err)
	}
}

// A closed Options.Stop (a signal came while the programs load) stops the
// loading: New returns ErrStopped with nothing loaded, without waiting for
// every program's verifier (a SIGTERM 0.5 s into the load, under load 3–4,
// ended iopath 12 s later: all 41 programs were verified first).
func TestNewStopped(t *testing.T) {
	testutil.NeedRoot(t)
	stop := make(chan struct{})
	close(stop)
	tr, err := New(Options{Stop: stop}, func(any) {})
	if !errors.Is(err, ErrStopped) || tr != nil {
		if tr != nil {
			tr.Close()
		}
		t.Fatalf("New with Stop closed: %v, want ErrStopped and no tracer", err)
	}
}
