package tracer

import (
	"os"
	"testing"

	"github.com/cilium/ebpf/btf"
)

// rawBTF marshals types (after a few of other kinds, so the scan has to step
// over their trailing records) as a kernel's BTF would be.
func rawBTF(t *testing.T, types ...btf.Type) []byte {
	t.Helper()
	u32 := &btf.Int{Name: "u32", Size: 4}
	other := []btf.Type{
		u32,
		&btf.Struct{Name: "request", Size: 8, Members: []btf.Member{{Name: "rq_flags", Type: u32}, {Name: "cmd_flags", Type: u32, Offset: 32}}},
		&btf.Array{Type: u32, Index: u32, Nelems: 4},
		&btf.Func{Name: "blk_insert_flush", Type: &btf.FuncProto{Return: u32, Params: []btf.FuncParam{{Name: "rq", Type: u32}}}},
		&btf.Enum{Name: "req_flag_bits", Size: 4, Values: []btf.EnumValue{{Name: "__REQ_FAILFAST_DEV", Value: 8}, {Name: "__REQ_SYNC", Value: 11}}},
		&btf.Enum{Name: "big", Size: 8, Values: []btf.EnumValue{{Name: "BIG", Value: 1 << 40}}},
	}
	b, err := btf.NewBuilder(append(other, types...), nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := b.Marshal(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func rqfEnum(name string) *btf.Enum {
	return &btf.Enum{Name: name, Size: 4, Values: []btf.EnumValue{
		{Name: "__RQF_STARTED", Value: 0}, {Name: "__RQF_FLUSH_SEQ", Value: 1}, {Name: "__RQF_MIXED_MERGE", Value: 2},
		{Name: "__RQF_DONTPREP", Value: 3}, {Name: "__RQF_SCHED_TAGS", Value: 4}}}
}

// TestRqfFlushSeq: the bit comes from the enumerator whether its enum is
// named (6.13+, 6.18, 7.2) or anonymous (Debian's 6.12.117: the CO-RE
// relocation the BPF code used before missed it and read bit 4,
// __RQF_SCHED_TAGS, so every request of a scheduled queue looked like a
// flush sequence); a kernel without the enumerator (5.10, 6.1) gets 1 << 4.
func TestRqfFlushSeq(t *testing.T) {
	for _, tc := range []struct {
		name  string
		types []btf.Type
		want  uint32
	}{
		{"named enum (7.2)", []btf.Type{rqfEnum("rqf_flags")}, 1 << 1},
		{"anonymous enum (6.12)", []btf.Type{rqfEnum("")}, 1 << 1},
		{"no enumerator (6.1)", nil, 1 << 4},
	} {
		got, err := rqfFlushSeq(rawBTF(t, tc.types...))
		if err != nil || got != tc.want {
			t.Errorf("%s: rqfFlushSeq = %#x, %v; want %#x", tc.name, got, err, tc.want)
		}
	}
	raw := rawBTF(t, rqfEnum(""))
	if _, err := rqfFlushSeq(raw[:len(raw)-100]); err == nil {
		t.Error("truncated BTF: no error")
	}
	if _, err := rqfFlushSeq([]byte("not BTF at all, 24 bytes or more")); err == nil {
		t.Error("bad magic: no error")
	}
	v, ok, err := btfEnumerator(rawBTF(t), "BIG")
	if err != nil || !ok || v != 1<<40 {
		t.Errorf("64-bit enumerator: %d %v %v", v, ok, err)
	}
}

// TestRqfFlushSeqRunningKernel compares the scan with cilium/ebpf's full
// decoding of the running kernel's BTF.
func TestRqfFlushSeqRunningKernel(t *testing.T) {
	raw, err := os.ReadFile("/sys/kernel/btf/vmlinux")
	if err != nil {
		t.Skipf("no kernel BTF: %v", err)
	}
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		t.Fatal(err)
	}
	want := uint32(rqfFlushSeqDefine)
	for typ, err := range spec.All() {
		if err != nil {
			t.Fatal(err)
		}
		if e, ok := typ.(*btf.Enum); ok {
			for _, v := range e.Values {
				if v.Name == "__RQF_FLUSH_SEQ" {
					want = 1 << v.Value
				}
			}
		}
	}
	got, err := rqfFlushSeq(raw)
	if err != nil || got != want {
		t.Errorf("rqfFlushSeq = %#x, %v; cilium/ebpf's decoding says %#x", got, err, want)
	}
}
