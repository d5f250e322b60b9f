package tracer

import (
	"fmt"
	"strings"

	"github.com/cilium/ebpf/btf"
)

// checkShape compares the arguments a program expects (attachment.shape)
// with the running kernel's BTF: the prototype of the function (fentry,
// fexit, kprobe) or of the btf_trace_<event> typedef, whose first argument
// is the tracepoint's context and is skipped. Argument lists change across
// kernels and stable series backport the changes (5.10.137+ already has the
// 5.11 block_rq_issue(rq)), so the shape decides, never the version.
func (p *prober) checkShape(a attachment) error {
	var proto *btf.FuncProto
	skip := 0
	switch a.kind {
	case akTPBTF:
		var td *btf.Typedef
		if err := p.kspec.TypeByName("btf_trace_"+a.target, &td); err != nil {
			return fmt.Errorf("no BTF tracepoint %s on this kernel", a.target)
		}
		if ptr, ok := btf.UnderlyingType(td).(*btf.Pointer); ok {
			proto, _ = ptr.Target.(*btf.FuncProto)
		}
		skip = 1
	case akFentry, akFexit, akKprobe, akKretprobe:
		var f *btf.Func
		if err := p.kspec.TypeByName(a.target, &f); err != nil {
			return fmt.Errorf("no BTF function %s on this kernel", a.target)
		}
		proto, _ = f.Type.(*btf.FuncProto)
	default:
		return nil
	}
	if proto == nil || len(proto.Params) < skip {
		return fmt.Errorf("%s: unexpected BTF type", a.target)
	}
	have := make([]string, 0, len(proto.Params)-skip)
	for _, prm := range proto.Params[skip:] {
		have = append(have, argName(prm.Type))
	}
	want := strings.Split(a.shape, ",")
	ok := len(want) == len(have)
	for i := 0; ok && i < len(want); i++ {
		ok = want[i] == "*" || want[i] == have[i]
	}
	if !ok {
		return fmt.Errorf("%s takes (%s) here, the program expects (%s)", a.target, strings.Join(have, ", "), strings.Join(want, ", "))
	}
	return nil
}

// argName names an argument type the way shapes do: the struct a pointer
// points to, or * for anything else.
func argName(t btf.Type) string {
	ptr, ok := btf.UnderlyingType(t).(*btf.Pointer)
	if !ok {
		return "*"
	}
	if s, ok := btf.UnderlyingType(ptr.Target).(*btf.Struct); ok {
		return s.Name
	}
	return "*"
}
