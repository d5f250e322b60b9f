package engine_test

import (
	"testing"

	"github.com/iopath/iopath/bpf"
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
