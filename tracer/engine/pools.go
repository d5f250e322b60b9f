package engine

import (
	"github.com/iopath/iopath/bpf"
	"github.com/iopath/iopath/tracer/kernel"
)

// intern returns b as a string, shared with earlier records that carried
// the same bytes (comm, worker names): a stream of one process's calls then
// allocates its comm once. The lookup with string(b) does not allocate.
func (e *Engine) intern(b []byte) string {
	if s, ok := e.names[string(b)]; ok {
		return s
	}
	if len(e.names) >= maxCached {
		clear(e.names)
	}
	s := string(b)
	e.names[s] = s
	return s
}

// comm interns a task's comm, checking the last one first.
func (e *Engine) comm(b []byte) string {
	if string(b) == e.lastComm {
		return e.lastComm
	}
	e.lastComm = e.intern(b)
	return e.lastComm
}

// fsName is FSName(magic), checking the last filesystem first.
func (e *Engine) fsName(magic uint64) string {
	if magic != e.lastMagic {
		e.lastMagic, e.lastFS = magic, kernel.FSName(magic)
	}
	return e.lastFS
}

// devName is Dev(kdev), rendered once per device.
func (e *Engine) devName(kdev uint32) string { return rendered(e.devNames, kdev, kernel.Dev) }

// rwbsName is K.Rwbs(cmdFlags), rendered once per distinct flag set (a
// device sees a few dozen).
func (e *Engine) rwbsName(cmdFlags uint32) string { return rendered(e.rwbsNames, cmdFlags, e.K.Rwbs) }

// rendered returns render(k), cached in m (cleared when it holds maxCached
// strings: a miss costs one rendering, never a wrong string).
func rendered(m map[uint32]string, k uint32, render func(uint32) string) string {
	if s, ok := m[k]; ok {
		return s
	}
	if len(m) >= maxCached {
		clear(m)
	}
	s := render(k)
	m[k] = s
	return s
}

// opPath is the call's path, the one its record carries (which becomes the
// file's path), or "" when its path record was lost: not the last path
// seen for the inode, which may be another hard link or an older name. A
// path equal to the one remembered is built on the stack and not allocated
// again.
func (e *Engine) opPath(o *bpf.IopathOp) string {
	key := fkey(o.Dev, o.Ino)
	if o.PathDepth == 0 {
		return ""
	}
	var buf [pathBufLen]byte
	p := appendOpPath(buf[:0], o)
	if old, ok := e.paths[key]; ok && old == string(p) && e.sameInode(key, o.PathGen) {
		return old
	}
	s := string(p)
	e.named(key, o.PathGen, s) // names.go: latest name, earlier names, reused inodes
	return s
}

// reuse pops an object off a free list, or allocates one.
func reuse[T any](free *[]*T) *T {
	if n := len(*free); n > 0 {
		x := (*free)[n-1]
		*free = (*free)[:n-1]
		return x
	}
	return new(T)
}

// recycle pushes x onto a free list of at most maxFree objects.
func recycle[T any](free *[]*T, x *T) {
	if len(*free) < maxFree {
		*free = append(*free, x)
	}
}

// putOp recycles a call removed from e.ops: it drops the call's hold on its
// bios and keeps the bios slice's storage.
func (e *Engine) putOp(p *pendingOp) {
	for i, b := range p.bios {
		e.unref(b)
		p.bios[i] = nil
	}
	*p = pendingOp{bios: p.bios[:0]}
	recycle(&e.freeOps, p)
}

func (e *Engine) newRq() *pendingRq { return reuse(&e.freeRqs) }

// putRq recycles a request removed from e.rqs, dropping its hold on its bios.
func (e *Engine) putRq(rq *pendingRq) {
	for i, b := range rq.bios {
		e.unref(b)
		rq.bios[i] = nil
	}
	*rq = pendingRq{bios: rq.bios[:0]}
	recycle(&e.freeRqs, rq)
}

func (e *Engine) newBio() *bioRef { return reuse(&e.freeBios) }

// unref drops one holder of b (its request or its call) and recycles it
// when none is left. Records hold copies (Bio values), never a bioRef.
func (e *Engine) unref(b *bioRef) {
	if b.refs--; b.refs == 0 {
		recycle(&e.freeBios, b)
	}
}
