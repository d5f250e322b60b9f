package workloads

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"
)

// prepare prepares s in a test directory and cleans up after the test.
func prepare(t *testing.T, s Spec) *Prepared {
	t.Helper()
	if s.Dir == "" && s.File == "" {
		s.Dir = t.TempDir()
	}
	p, err := Prepare(s)
	if err != nil {
		t.Fatalf("Prepare(%+v): %v", s, err)
	}
	t.Cleanup(func() {
		if err := p.Cleanup(); err != nil {
			t.Errorf("Cleanup: %v", err)
		}
	})
	return p
}

// run runs p and fails the test on error.
func run(t *testing.T, p *Prepared) *Report {
	t.Helper()
	r, err := p.Run(context.Background())
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return r
}

// calls returns the calls and bytes of the named system calls in r.
func calls(r *Report, names ...string) (n, bytes int64) {
	for _, c := range r.Syscalls {
		for _, name := range names {
			if c.Name == name {
				n += c.Calls
				bytes += c.Bytes
			}
		}
	}
	return n, bytes
}

// simulateSync counts the lseeks the sync engine needs for offs.
func simulateSync(offs *Offsets, ops, bs int64) (seeks int64) {
	pos, known := int64(0), false
	for range ops {
		off := offs.Next()
		if !known || pos != off {
			seeks++
		}
		pos, known = off+bs, true
	}
	return seeks
}

// TestSyscalls checks, for every kind and engine, that the ops issued the
// system calls the engine claims, and that the kernel's own per-thread
// counters agree with the engine's counts.
func TestSyscalls(t *testing.T) {
	defer func() { rawSyscalls = true }()
	for _, raw := range []bool{true, false} {
		rawSyscalls = raw
		for _, kind := range Kinds() {
			for _, engine := range Engines() {
				t.Run(fmt.Sprintf("%s/%s/raw=%v", kind, engine, raw), func(t *testing.T) {
					testSyscalls(t, kind, engine)
				})
			}
		}
	}
}

func testSyscalls(t *testing.T, kind, engine string) {
	s := Spec{Kind: kind, Engine: engine, FileSize: 256 << 10, Count: 300}
	if s.small() {
		s.FileSize, s.Count = 64<<10, 10000
	}
	p := prepare(t, s)
	r := run(t, p)
	bs := p.Spec.BlockSize
	if r.Ops != s.Count || r.Bytes != s.Count*bs {
		t.Fatalf("ops %d bytes %d, want %d and %d", r.Ops, r.Bytes, s.Count, s.Count*bs)
	}
	if r.Latency.Count != r.Ops {
		t.Errorf("latency histogram has %d values for %d ops", r.Latency.Count, r.Ops)
	}
	k := r.Kernel
	if k == nil {
		t.Fatal("no kernel IO accounting: /proc/thread-self/io missing?")
	}
	rn, rb := calls(r, "read", "pread64")
	wn, wb := calls(r, "write", "pwrite64")
	if k.ReadCalls != rn || k.ReadChars != rb || k.WriteCalls != wn || k.WriteChars != wb {
		t.Errorf("engine counted reads %d/%d B, writes %d/%d B; kernel counted reads %d/%d B, writes %d/%d B",
			rn, rb, wn, wb, k.ReadCalls, k.ReadChars, k.WriteCalls, k.WriteChars)
	}
	write := isWrite(kind)
	io, iob := rn, rb
	if write {
		io, iob = wn, wb
		if rn != 0 {
			t.Errorf("a write workload issued %d reads", rn)
		}
	} else if wn != 0 {
		t.Errorf("a read workload issued %d writes", wn)
	}
	switch engine {
	case EnginePsync:
		if io != s.Count || iob != s.Count*bs {
			t.Errorf("psync: %d calls of %d bytes, want one call of %d bytes per op", io, iob, bs)
		}
	case EngineSync:
		seeks, _ := calls(r, "lseek")
		if want := simulateSync(p.Offsets(), s.Count, bs); seeks != want {
			t.Errorf("sync: %d lseeks, want %d", seeks, want)
		}
		if io != s.Count || iob != s.Count*bs {
			t.Errorf("sync: %d calls of %d bytes, want one call of %d bytes per op", io, iob, bs)
		}
	case EngineLibaio, EngineIOUring:
		// One request per op, none of the read/write family the kernel counts.
		sub, subBytes := calls(r, "io_submit", "io_uring_enter (submit)")
		if io != 0 || k.ReadCalls != 0 || k.WriteCalls != 0 || subBytes != s.Count*bs || sub < 1 || sub > s.Count {
			t.Errorf("%s: submitted %d bytes in %d calls for %d ops of %d bytes; read/write calls %d, kernel %+v", engine, subBytes, sub, s.Count, bs, io, k)
		}
		if r.SubmitLatency == nil || r.SubmitLatency.Count != s.Count || r.CompletionLatency.Count != s.Count {
			t.Errorf("%s: slat %+v clat %+v, want %d values each", engine, r.SubmitLatency, r.CompletionLatency, s.Count)
		}
	case EngineMmap:
		if len(r.Syscalls) != 0 || k.ReadCalls != 0 || k.WriteCalls != 0 {
			t.Errorf("mmap issued system calls: %+v, kernel %+v", r.Syscalls, k)
		}
	case EngineStdio:
		if iob != s.Count*bs && !write {
			// Reads may fetch a little more than asked (whole buffers).
			if iob < s.Count*bs {
				t.Errorf("stdio read %d bytes for %d bytes of ops", iob, s.Count*bs)
			}
		}
		if write && iob != s.Count*bs {
			t.Errorf("stdio wrote %d bytes for %d bytes of ops", iob, s.Count*bs)
		}
		if bs == 1 && !p.Spec.random() {
			// 10000 sequential bytes through a 4096-byte buffer: 3 calls.
			if io != 3 {
				t.Errorf("stdio made %d calls for 10000 sequential 1-byte ops, want 3 (4096+4096+1808 bytes)", io)
			}
		}
	}
	fi, err := os.Stat(p.Path)
	if err != nil {
		t.Fatal(err)
	}
	if want := p.Base + p.Spec.FileSize; p.Spec.appends() && engine != EngineMmap && fi.Size() != min(want, p.Base+s.Count*bs) {
		t.Errorf("after appending %d bytes the file is %d bytes", s.Count*bs, fi.Size())
	} else if !p.Spec.appends() && fi.Size() != p.Spec.FileSize {
		t.Errorf("file size changed from %d to %d: a write went past the end", p.Spec.FileSize, fi.Size())
	}
}

// TestSyncCalls checks fsync and fdatasync every K writes.
func TestSyncCalls(t *testing.T) {
	for _, engine := range Engines() {
		for _, data := range []bool{false, true} {
			t.Run(fmt.Sprint(engine, data), func(t *testing.T) {
				s := Spec{Kind: KindSmallWrite, Engine: engine, Count: 100, FileSize: 4096}
				name := "fsync"
				if data {
					s.FdatasyncEvery, name = 25, "fdatasync"
				} else {
					s.FsyncEvery = 25
				}
				if engine == EngineMmap {
					name = "msync"
				}
				r := run(t, prepare(t, s))
				if n, _ := calls(r, name); n != 4 {
					t.Errorf("%d %s calls for 100 writes synced every 25, want 4 (%+v)", n, name, r.Syscalls)
				}
				if r.SyncLatency == nil || r.SyncLatency.Count != 4 {
					t.Errorf("sync latency %+v, want 4 values", r.SyncLatency)
				}
			})
		}
	}
}

// recorder wraps an engine and keeps the offsets of its ops.
type recorder struct {
	engine
	offs []int64
}

func (r *recorder) op(buf []byte, off int64) (int, error) {
	r.offs = append(r.offs, off)
	return r.engine.op(buf, off)
}

// TestRunUsesOffsets checks that Run issues its ops at the offsets of
// Prepared.Offsets, in order, aligned and inside the region.
func TestRunUsesOffsets(t *testing.T) {
	for _, s := range []Spec{
		{Kind: KindRandRead, FileSize: 1 << 20, BlockSize: 8192, Count: 1000, Seed: 7},
		{Kind: KindRandWrite, FileSize: 1<<20 + 10, BlockSize: 4096, Count: 1000},
		{Kind: KindRead1Byte, Random: true, FileSize: 1000, Count: 1000},
		{Kind: KindSeqRead, FileSize: 40960, Count: 25},
		{Kind: KindSmallWrite, BlockSize: 100, FileSize: 1000, Count: 25},
	} {
		p := prepare(t, s)
		rec := &recorder{engine: p.eng}
		p.eng = rec
		run(t, p)
		want := p.Offsets()
		for i, off := range rec.offs {
			if w := want.Next(); off != w {
				t.Fatalf("%s: op %d at %d, want %d", s.Kind, i, off, w)
			}
			if off < p.Base || off+p.Spec.BlockSize > p.Base+p.Spec.FileSize || (off-p.Base)%p.Spec.BlockSize != 0 {
				t.Fatalf("%s: op at %d outside the region or misaligned", s.Kind, off)
			}
		}
		if int64(len(rec.offs)) != s.Count {
			t.Errorf("%s: %d ops, want %d", s.Kind, len(rec.offs), s.Count)
		}
	}
}

// TestNoAllocPerOp checks the hot loop does not allocate: a run of 100
// times more ops allocates no more.
func TestNoAllocPerOp(t *testing.T) {
	for _, engine := range Engines() {
		p := prepare(t, Spec{Kind: KindRead1Byte, Engine: engine, FileSize: 1 << 20})
		mallocs := func(n int64) uint64 {
			p.Spec.Count = n
			var a, b runtime.MemStats
			runtime.ReadMemStats(&a)
			run(t, p)
			runtime.ReadMemStats(&b)
			return b.Mallocs - a.Mallocs
		}
		mallocs(1000) // warm up
		small, big := mallocs(1000), mallocs(100000)
		if big > small+20 {
			t.Errorf("%s: 1000 ops made %d allocations, 100000 ops made %d", engine, small, big)
		}
	}
}

func TestDurationAndCount(t *testing.T) {
	p := prepare(t, Spec{Kind: KindRead1Byte, FileSize: 4096, Duration: 50 * time.Millisecond})
	r := run(t, p)
	if r.Runtime < 50*time.Millisecond || r.Runtime > 5*time.Second || r.Ops < 100 {
		t.Errorf("--duration 50ms ran %s and %d ops", r.Runtime, r.Ops)
	}
	p.Spec.Count = 10
	if r := run(t, p); r.Ops != 10 {
		t.Errorf("count 10 with a duration ran %d ops", r.Ops)
	}
	p.Spec.Count, p.Spec.Duration = 0, 0
	if r := run(t, p); r.Ops != 4096 {
		t.Errorf("no count or duration ran %d ops, want one pass: 4096", r.Ops)
	}
}

func TestCancel(t *testing.T) {
	p := prepare(t, Spec{Kind: KindRead1Byte, FileSize: 4096, Duration: time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r, err := p.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Interrupted || r.Ops > ctxCheckEvery {
		t.Errorf("cancelled run: interrupted %v after %d ops", r.Interrupted, r.Ops)
	}
}
