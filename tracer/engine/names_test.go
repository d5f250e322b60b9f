package engine_test

import (
	"testing"

	"github.com/iopath/iopath/bpf"
	"github.com/iopath/iopath/record"
	"github.com/iopath/iopath/tracer/engine"
)

// A path the kernel could not walk to the root is marked as a suffix.
func TestOpPathSuffix(t *testing.T) {
	o := &bpf.IopathOp{PathDepth: 2}
	copy(o.Path[0][:], []int8{'f'})
	copy(o.Path[1][:], []int8{'d'})
	if p := engine.OpPath(o); p != ".../d/f" {
		t.Errorf("path %q", p)
	}
}

// A name cut at PART_LEN-1 bytes is marked where it was cut, not at the end.
func TestOpPathTruncationMark(t *testing.T) {
	o := &bpf.IopathOp{PathDepth: 2, PathDone: 1, PathTrunc: 1 << 1}
	copy(o.Path[0][:], []int8{'f'})
	copy(o.Path[1][:], []int8{'l', 'o', 'n', 'g'})
	if p := engine.OpPath(o); p != "/long…/f" {
		t.Errorf("path %q, want /long…/f", p)
	}
}

// Every call the BPF programs trace has a name and a class, and the class
// of each number agrees with the families of enum op_sys (bpf/common.h):
// the one classification (record.ClassOf) covers the kernel's numbering.
func TestEveryTracedCallIsClassified(t *testing.T) {
	want := map[bpf.IopathOpSys]record.Class{}
	for s := bpf.IopathOpSysSYS_READ; s <= bpf.IopathOpSysSYS_PREADV2; s++ {
		want[s] = record.ClassRead
	}
	for s := bpf.IopathOpSysSYS_WRITE; s <= bpf.IopathOpSysSYS_PWRITEV2; s++ {
		want[s] = record.ClassWrite
	}
	for s := bpf.IopathOpSysSYS_FSYNC; s <= bpf.IopathOpSysSYS_SYNCFS; s++ {
		want[s] = record.ClassSync
	}
	want[bpf.IopathOpSysSYS_VFS_READ] = record.ClassRead
	want[bpf.IopathOpSysSYS_VFS_WRITE] = record.ClassWrite
	for _, s := range []bpf.IopathOpSys{bpf.IopathOpSysSYS_SENDFILE, bpf.IopathOpSysSYS_SPLICE, bpf.IopathOpSysSYS_COPY_FILE_RANGE} {
		want[s] = record.ClassRead // in-kernel copies: traced as reads of their source
		if !record.IsCopy(engine.SysName(uint32(s))) {
			t.Errorf("%s is not an in-kernel copy", engine.SysName(uint32(s)))
		}
	}
	for s, class := range want {
		name := engine.SysName(uint32(s))
		if name == "" || record.ClassOf(name) != class {
			t.Errorf("op_sys %d: name %q, class %d, want class %d", s, name, record.ClassOf(name), class)
		}
	}
	if record.ClassOf("sys_99") != record.ClassOther || engine.SysName(99) != "" {
		t.Error("an unknown call is classified")
	}
}
