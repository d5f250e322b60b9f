package tracer

import (
	"sync"

	"github.com/cilium/ebpf/btf"
	"github.com/iopath/iopath/aggregate"
	"github.com/iopath/iopath/bpf"
)

// AggMaps returns the maps of the in-kernel aggregates (bpf/agg.h), kept
// when the tracer was opened with Options.Agg or AggOnly.
func (t *Tracer) AggMaps() aggregate.Maps {
	m := t.coll.Maps
	return aggregate.Maps{
		Procs: m[bpf.IopathMapAggProcs], Files: m[bpf.IopathMapAggFiles], Other: m[bpf.IopathMapAggOther],
		Devs: m[bpf.IopathMapAggDevs], Global: m[bpf.IopathMapAggG], Rqs: m[bpf.IopathMapAggRqs],
	}
}

// MissedRuns returns, per BPF program that missed any, the runs the kernel
// skipped because the program was already running on that CPU (its
// recursion protection: an interrupt's block_rq_complete while the same
// program ran, Linux 5.12+ counts them in recursion_misses). What such a
// run would have counted is lost: top, serve and trace show these.
func (t *Tracer) MissedRuns() map[string]uint64 {
	all, _ := t.ProgramMisses()
	for name, n := range all {
		if n == 0 {
			delete(all, name)
		}
	}
	return all
}

// ProgramMisses returns MissedRuns for every loaded (attached) program,
// zeros included: a Prometheus counter exists from the start. ok is false
// when the kernel does not count skipped runs (struct bpf_prog_info
// without recursion_misses in its BTF: before 5.12), where a 0 would say
// that none was skipped; the map is then empty.
func (t *Tracer) ProgramMisses() (map[string]uint64, bool) {
	out := map[string]uint64{}
	if !countsMisses() {
		return out, false
	}
	t.spares.mu.Lock() // spare.go adds programs while Run runs
	defer t.spares.mu.Unlock()
	for name, p := range t.coll.Programs {
		if st, err := p.Stats(); err == nil {
			out[name] = st.RecursionMisses
		}
	}
	t.adjustForSpares(out) // spare.go: skips a spare made up for are not lost
	return out, true
}

// countsMisses probes the kernel's BTF for bpf_prog_info.recursion_misses.
var countsMisses = sync.OnceValue(func() bool {
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		return false
	}
	var info *btf.Struct
	if spec.TypeByName("bpf_prog_info", &info) != nil {
		return false
	}
	for _, m := range info.Members {
		if m.Name == "recursion_misses" {
			return true
		}
	}
	return false
})

// dropFaultsAggOnly leaves the fault hooks out under AggOnly: a fault is a
// record of its own (bpf/fault.c streams it), which top and serve never
// send, and the aggregates count system calls only.
func dropFaultsAggOnly(chosen map[string]candidate, st []HookStatus) {
	for _, h := range faultHooks() {
		if h.Name == "msync" || h.Name == "advice" { // calls: aggregated as calls (or not at all), never streamed
			continue
		}
		delete(chosen, h.Name)
		for i := range st {
			if st[i].Hook == h.Name && st[i].Mechanism != None {
				st[i].Variant = "not attached: top and serve count system calls only"
			}
		}
	}
}
