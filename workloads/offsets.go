package workloads

import "math/rand/v2"

// Offsets generates the file offset, in bytes, of each op of a workload:
// block-aligned offsets in the region [base, base+size) such that every op of
// bs bytes lies inside it. Sequential offsets start at base and wrap to base
// after the last whole block; random offsets are uniform over the region's
// blocks (with repeats, like fio's norandommap) and the same seed gives the
// same sequence.
type Offsets struct {
	base, bs, blocks int64
	next             int64 // next sequential block
	rng              *rand.Rand
}

// NewOffsets returns the offset generator for a region of size bytes starting
// at base, with ops of bs bytes. It returns nil if no op fits (bs > size or bs < 1).
func NewOffsets(base, size, bs int64, random bool, seed uint64) *Offsets {
	if bs < 1 || size < bs {
		return nil
	}
	o := &Offsets{base: base, bs: bs, blocks: size / bs}
	if random {
		o.rng = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	}
	return o
}

// Blocks returns the number of whole blocks in the region: the ops in one pass.
func (o *Offsets) Blocks() int64 { return o.blocks }

// Next returns the offset of the next op, in bytes.
func (o *Offsets) Next() int64 {
	if o.rng != nil {
		return o.base + o.rng.Int64N(o.blocks)*o.bs
	}
	b := o.next
	o.next++
	if o.next == o.blocks {
		o.next = 0
	}
	return o.base + b*o.bs
}
