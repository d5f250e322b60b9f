package timeline

// fifo is a map of at most n entries; putting into a full one evicts the
// oldest entry. It keeps a timeline's memory bounded however long the trace.
type fifo[K comparable, V any] struct {
	m     map[K]fifoEntry[V]
	ring  []fifoSlot[K]
	next  int // ring slot the next put takes
	seq   uint64
	limit int
}

type fifoEntry[V any] struct {
	v    V
	seq  uint64
	used bool
}

type fifoSlot[K comparable] struct {
	k   K
	seq uint64
}

func newFIFO[K comparable, V any](n int) fifo[K, V] {
	return fifo[K, V]{m: map[K]fifoEntry[V]{}, limit: n}
}

// put stores v under k and returns the entry evicted to make room, if one
// was, and whether it was never read (get/take).
func (f *fifo[K, V]) put(k K, v V) (evicted V, evictedUnused bool) {
	f.seq++
	if len(f.ring) < f.limit {
		f.ring = append(f.ring, fifoSlot[K]{k, f.seq})
	} else {
		old := f.ring[f.next]
		// The slot's key may have been taken, or put again later (then
		// a newer slot owns it): only evict the entry this slot added.
		if e, ok := f.m[old.k]; ok && e.seq == old.seq {
			delete(f.m, old.k)
			evicted, evictedUnused = e.v, !e.used
		}
		f.ring[f.next] = fifoSlot[K]{k, f.seq}
		f.next = (f.next + 1) % f.limit
	}
	f.m[k] = fifoEntry[V]{v: v, seq: f.seq}
	return evicted, evictedUnused
}

// drain removes and returns the entries left, oldest first.
func (f *fifo[K, V]) drain() []V {
	var out []V
	for i := range f.ring {
		s := f.ring[(f.next+i)%len(f.ring)]
		if e, ok := f.m[s.k]; ok && e.seq == s.seq {
			out = append(out, e.v)
			delete(f.m, s.k)
		}
	}
	return out
}

// get returns k's value, leaving it in place.
func (f *fifo[K, V]) get(k K) (V, bool) {
	e, ok := f.m[k]
	if ok && !e.used {
		e.used = true
		f.m[k] = e
	}
	return e.v, ok
}

// take returns k's value and removes it.
func (f *fifo[K, V]) take(k K) (V, bool) {
	e, ok := f.m[k]
	if ok {
		delete(f.m, k)
	}
	return e.v, ok
}
