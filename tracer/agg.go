package tracer

import (
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
