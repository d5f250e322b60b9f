package tracer

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/iopath/iopath/internal/testutil"
)

// adder is a socket filter that adds n to slot 0 of the array "counts".
func adder(n int32) *ebpf.ProgramSpec {
	return &ebpf.ProgramSpec{Type: ebpf.SocketFilter, License: "GPL", Instructions: asm.Instructions{
		asm.Mov.Imm(asm.R1, 0),
		asm.StoreMem(asm.RFP, -4, asm.R1, asm.Word),
		asm.LoadMapPtr(asm.R1, 0).WithReference("counts"),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -4),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "out"),
		asm.Mov.Imm(asm.R1, n),
		asm.AddAtomic.Mem(asm.R0, asm.R1, asm.DWord, 0),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("out"),
		asm.Return(),
	}}
}

// TestLoadCollectionSharesMaps: programs loaded in parallel use the maps
// created first (one counter, seen by all), not copies of their own.
func TestLoadCollectionSharesMaps(t *testing.T) {
	testutil.NeedRoot(t)
	spec := &ebpf.CollectionSpec{Maps: map[string]*ebpf.MapSpec{
		"counts": {Name: "counts", Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1},
	}, Programs: map[string]*ebpf.ProgramSpec{}}
	want := uint64(0)
	for i := int32(1); i <= 8; i++ {
		spec.Programs[fmt.Sprint("add", i)] = adder(i)
		want += uint64(i)
	}
	coll, err := loadCollection(spec, btf.NewCache(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer coll.Close()
	if len(coll.Programs) != 8 {
		t.Fatalf("%d programs loaded, want 8", len(coll.Programs))
	}
	for name, p := range coll.Programs {
		if _, _, err := p.Test(make([]byte, 14)); err != nil {
			t.Fatalf("running %s: %v", name, err)
		}
	}
	var got uint64
	if err := coll.Maps["counts"].Lookup(uint32(0), &got); err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("counts[0] = %d after running every program once, want %d (programs do not share the map)", got, want)
	}
}

// TestLoadCollectionError: a program the verifier refuses fails the load
// with an error naming it, as NewCollection's would.
func TestLoadCollectionError(t *testing.T) {
	testutil.NeedRoot(t)
	spec := &ebpf.CollectionSpec{Maps: map[string]*ebpf.MapSpec{
		"counts": {Name: "counts", Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1},
	}, Programs: map[string]*ebpf.ProgramSpec{"good": adder(1), "bad": {Type: ebpf.SocketFilter, License: "GPL",
		Instructions: asm.Instructions{asm.Return()}}}} // R0 never set
	coll, err := loadCollection(spec, btf.NewCache(), nil)
	if err == nil {
		coll.Close()
		t.Fatal("loaded a program that reads an unset R0")
	}
	if !strings.HasPrefix(err.Error(), "program bad:") {
		t.Errorf("error %q does not name the refused program", err)
	}
}
