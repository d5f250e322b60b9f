package workloads

import (
	"slices"
	"testing"
)

func TestOffsetsSequential(t *testing.T) {
	o := NewOffsets(100, 4096*3+5, 4096, false, 1)
	if o.Blocks() != 3 {
		t.Fatalf("Blocks() = %d, want 3", o.Blocks())
	}
	var got []int64
	for range 7 {
		got = append(got, o.Next())
	}
	want := []int64{100, 4196, 8292, 100, 4196, 8292, 100}
	if !slices.Equal(got, want) {
		t.Errorf("offsets %v, want %v", got, want)
	}
}

func TestOffsetsRandom(t *testing.T) {
	const base, size, bs = 8192, 1<<20 + 100, 4096
	seq := func(seed uint64) []int64 {
		o := NewOffsets(base, size, bs, true, seed)
		out := make([]int64, 10000)
		for i := range out {
			out[i] = o.Next()
		}
		return out
	}
	a := seq(42)
	if b := seq(42); !slices.Equal(a, b) {
		t.Error("the same seed gave different offsets")
	}
	if c := seq(43); slices.Equal(a, c) {
		t.Error("different seeds gave the same offsets")
	}
	hits := make(map[int64]int)
	for _, off := range a {
		if off < base || off+bs > base+size || (off-base)%bs != 0 {
			t.Fatalf("offset %d outside [%d, %d) or not aligned to %d", off, base, base+size, bs)
		}
		hits[off]++
	}
	// 10000 draws over 256 blocks: every block should come up, none hugely often.
	if len(hits) != 256 {
		t.Errorf("random offsets hit %d of 256 blocks", len(hits))
	}
	for off, n := range hits {
		if n > 100 {
			t.Errorf("block at %d hit %d times of 10000 (expected about 39)", off, n)
		}
	}
}

func TestOffsetsNoFit(t *testing.T) {
	if NewOffsets(0, 4095, 4096, false, 1) != nil || NewOffsets(0, 10, 0, true, 1) != nil {
		t.Error("NewOffsets returned a generator for a region no op fits in")
	}
	o := NewOffsets(0, 1, 1, true, 1)
	for range 10 {
		if off := o.Next(); off != 0 {
			t.Fatalf("one-block region gave offset %d", off)
		}
	}
}
