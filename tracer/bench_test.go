package tracer

// Capacity benchmarks of the userspace half: ring-buffer records, encoded as
// the kernel writes them (little endian, the generated layouts of package
// bpf), decoded by Dispatch and joined by the Engine. They answer "how many
// events per second can one core absorb before the ring buffer overflows?"
// (docs/benchmarks.md; target ≥ 3 M events/s per core).
//
// Streams (one b.N iteration = one traced call):
//   - Hit:  1 event, an EV_OP of a 1-byte cache-hit read (what --all streams
//     for every call; the default mode folds these into hit_stats in BPF).
//   - Miss: 3 events, EV_RQ_ISSUE (1 owned bio) + EV_RQ_COMPLETE + EV_OP of a
//     4 KiB read that missed one page, in ring-buffer order.
//   - Mixed: 9 hits then 1 miss (12 events per 10 calls).
//
// Records are cut as the kernel sends them (an EV_OP up to its last page
// range, an EV_RQ_ISSUE up to its last owned bio), and each stream carries
// the thread's EV_PATH every 256 calls, as bpf/op.h resends it.
//
// Replay: the pool's records lie back to back in one buffer laid out like
// the BPF ring buffer (8-byte header, data padded to 8 bytes), and each is
// copied into one reused sample buffer before Dispatch, as
// ringbuf.Reader.ReadInto does for Tracer.Run: the decoder reads a hot
// copy, and the copy (a sequential read of the ring) is part of the cost.
//
// Sinks: Discard drops the records (decoder + engine only); JSON prints
// each record with render.Printer in --json mode (appended, batched) to
// io.Discard, as `trace --json` does; Text prints its story, as the default
// mode does.
//
// Metrics: events/s (per core with -cpu 1), ns/event, allocs/event and
// B/event, plus the usual ns/op and allocs/op per call.
//
//   go test -run '^$' -bench . -benchtime 2s -cpu 1 ./tracer

import (
	"bytes"
	"encoding/binary"
	"io"
	"runtime"
	"testing"
	"unsafe"

	"github.com/iopath/iopath/bpf"
	"github.com/iopath/iopath/record"
	"github.com/iopath/iopath/render"
	"github.com/iopath/iopath/tracer/engine"
	"github.com/iopath/iopath/tracer/kernel"
)

const benchDev = 254 << 20 // kernel dev_t 254:0 (vda)

// benchRaw encodes v (a struct of package bpf) as the kernel would write it
// into the ring buffer. The buffer is 8-byte aligned like a ring-buffer
// sample, since Dispatch casts it in place.
func benchRaw(tb testing.TB, v any, size uintptr) []byte {
	var buf bytes.Buffer
	if err := binary.Write(&buf, binary.LittleEndian, v); err != nil {
		tb.Fatalf("encoding %T: %v", v, err)
	}
	if uintptr(buf.Len()) != size {
		tb.Fatalf("%T encodes to %d bytes, the C layout has %d", v, buf.Len(), size)
	}
	words := make([]uint64, (buf.Len()+7)/8)
	raw := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), buf.Len())
	copy(raw, buf.Bytes())
	return raw
}

// benchOpRaw and benchPathRaw cut the EV_OP and EV_PATH records out of a
// struct op as bpf/op.h sends them.
func benchOpRaw(tb testing.TB, o *bpf.IopathOp) []byte {
	full := benchRaw(tb, o, unsafe.Sizeof(*o))
	return aligned(full[opStart : opStart+opFixed+uintptr(o.NrRanges)*unsafe.Sizeof(o.Ranges[0])])
}

func benchPathRaw(tb testing.TB, o *bpf.IopathOp) []byte {
	p := *o
	p.PathType, p.PathTid, p.PathNo, p.PathIno, p.PathDev = uint32(bpf.IopathEvTypeEV_PATH), o.Tid, o.PathSeq, o.Ino, o.Dev
	full := benchRaw(tb, &p, unsafe.Sizeof(p))
	return aligned(full[pathStart : pathStart+pathFixed+uintptr(p.PathDepth)*unsafe.Sizeof(p.Path[0])])
}

func aligned(b []byte) []byte {
	words := make([]uint64, (len(b)+7)/8)
	raw := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), len(b))
	copy(raw, b)
	return raw
}

// benchHitOp is a 1-byte read at offset off that hit the page cache.
func benchHitOp(id, off, start uint64) *bpf.IopathOp {
	o := &bpf.IopathOp{Type: uint32(bpf.IopathEvTypeEV_OP), Sys: uint32(bpf.IopathOpSysSYS_PREAD64), Pid: 100,
		Tid: uint32(id >> 32), OpId: id, StartNs: start, EndNs: start + 700, Ret: 1, Fd: 3, Offset: off,
		Count: 1, Ino: 42, Dev: benchDev, FsMagic: 0xef53, Lookups: 1}
	copy(o.Comm[:], []int8{'f', 'i', 'o'})
	o.LookupFirst, o.LookupLast = off>>12, off>>12
	return o
}

// benchMissOp is a 4 KiB read of page index that missed and queued one bio.
func benchMissOp(id, index, start uint64) *bpf.IopathOp {
	o := benchHitOp(id, index<<12, start)
	o.Count, o.Ret, o.EndNs = 4096, 4096, start+120_000
	o.PagesAdded, o.PagesInRange, o.BiosQueued, o.BioBytes, o.BlockedNs = 1, 1, 1, 4096, 110_000
	o.NrRanges = 1
	o.Ranges[0].Index, o.Ranges[0].Nr, o.Ranges[0].Flags = index, 1, engine.RangeAdded
	o.NrRa = 1
	o.Ra[0].Index, o.Ra[0].Start, o.Ra[0].ReqCount, o.Ra[0].Kind = index, index, 1, engine.RASync
	// A streamed call carries its path (fill_path): deepest name first.
	for i, s := range []string{"data", "bench", "tmp", "var"} {
		for j := 0; j < len(s); j++ {
			o.Path[i][j] = int8(s[j])
		}
	}
	o.PathDepth, o.PathDone = 4, 1
	return o
}

func benchIssue(rq, ts uint64, id, bio, sector uint64) *bpf.IopathRqIssueEv {
	ev := &bpf.IopathRqIssueEv{Type: uint32(bpf.IopathEvTypeEV_RQ_ISSUE), Dev: benchDev, Rq: rq, Ts: ts,
		Sector: sector, Bytes: 4096, CmdFlags: 0 /* REQ_OP_READ */, NrBios: 1, NrOwn: 1, IssuerTid: uint32(id >> 32)}
	ev.Own[0].OpId, ev.Own[0].Bio, ev.Own[0].Sector, ev.Own[0].QueueNs = id, bio, sector, ts-2_000
	ev.Own[0].Bytes, ev.Own[0].Pid, ev.Own[0].Tid = 4096, 100, uint32(id>>32)
	return ev
}

func benchDone(rq, ts uint64) *bpf.IopathRqDoneEv {
	return &bpf.IopathRqDoneEv{Type: uint32(bpf.IopathEvTypeEV_RQ_COMPLETE), Rq: rq, Ts: ts, Bytes: 4096}
}

// benchCall is one traced call: its records in ring-buffer order.
type benchCall [][]byte

// benchStream builds n calls; miss(i) says whether call i missed. Op ids,
// offsets, request tags and timestamps vary like a real stream's (request
// tags are recycled from a small set, as blk-mq does).
func benchStream(tb testing.TB, n int, miss func(i int) bool) (calls []benchCall, events int) {
	const tid = 4242
	ts := uint64(1e12)
	for i := 0; i < n; i++ {
		id := uint64(tid)<<32 | uint64(i+1)
		ts += 1_000
		// The kernel sends the thread's path before its first record on
		// the file and again every PATH_RESEND (256) records.
		var path []byte
		seq := uint32(i/256 + 1)
		if i%256 == 0 {
			p := benchMissOp(id, 0, ts)
			p.PathSeq = seq
			path = benchPathRaw(tb, p)
			events++
		}
		if !miss(i) {
			o := benchHitOp(id, uint64(i)%(1<<20), ts)
			o.PathSeq = seq
			c := benchCall{benchOpRaw(tb, o)}
			if path != nil {
				c = append(benchCall{path}, c...)
			}
			calls = append(calls, c)
			events++
			continue
		}
		index := uint64(i*7919) % 262144
		rq := 0xffff888100000000 + uint64(i%64)*0x200
		bio := 0xffff888200000000 + uint64(i)*0x100
		issue := benchRaw(tb, benchIssue(rq, ts+5_000, id, bio, index*8), unsafe.Sizeof(bpf.IopathRqIssueEv{}))
		c := benchCall{
			issue[:unsafe.Offsetof(bpf.IopathRqIssueEv{}.Own)+unsafe.Sizeof(bpf.IopathIssueOwn{})], // cut after its one owned bio
			benchRaw(tb, benchDone(rq, ts+105_000), unsafe.Sizeof(bpf.IopathRqDoneEv{})),
		}
		if path != nil {
			c = append(c, path)
		}
		o := benchMissOp(id, index, ts)
		o.PathSeq = seq
		calls = append(calls, append(c, benchOpRaw(tb, o)))
		events += 3
		ts += 120_000
	}
	return calls, events
}

// benchRing lays calls out as the kernel's ring buffer holds them: each
// record after an 8-byte header (its length), padded to 8 bytes. It returns
// the ring and, per call, where its records start and how many there are.
func benchRing(calls []benchCall) (ring []byte, starts, counts []int) {
	size := 0
	for _, c := range calls {
		for _, raw := range c {
			size += 8 + (len(raw)+7)&^7
		}
	}
	ring = make([]byte, size)
	off := 0
	for _, c := range calls {
		starts, counts = append(starts, off), append(counts, len(c))
		for _, raw := range c {
			binary.LittleEndian.PutUint32(ring[off:], uint32(len(raw)))
			copy(ring[off+8:], raw)
			off += 8 + (len(raw)+7)&^7
		}
	}
	return ring, starts, counts
}

func benchDispatch(b *testing.B, miss func(i int) bool, sink func(any)) {
	// A pool of distinct calls, replayed in order: an op id or request tag
	// comes back only after its previous use was released.
	const pool = 4096
	calls, _ := benchStream(b, pool, miss)
	ring, starts, counts := benchRing(calls)
	// The reused sample (ringbuf.Record.RawSample): 8-byte aligned, since
	// Dispatch casts it in place.
	sampleMem := make([]uint64, (unsafe.Sizeof(bpf.IopathRqIssueEv{})+unsafe.Sizeof(bpf.IopathOp{}))/8)
	sample := unsafe.Slice((*byte)(unsafe.Pointer(&sampleMem[0])), len(sampleMem)*8)
	e := engine.New(kernel.Linux618(), sink)
	var d Decoder
	var ms0, ms1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms0)
	b.ReportAllocs()
	b.ResetTimer()
	events := 0
	i := 0
	for b.Loop() {
		off := starts[i]
		for range counts[i] {
			n := int(binary.LittleEndian.Uint32(ring[off:]))
			raw := sample[:n]
			copy(raw, ring[off+8:off+8+n])
			off += 8 + (n+7)&^7
			if err := d.Dispatch(e, raw); err != nil {
				b.Fatal(err)
			}
		}
		events += counts[i]
		if i++; i == pool {
			i = 0
		}
	}
	b.StopTimer()
	runtime.ReadMemStats(&ms1)
	if ops, rqs := e.Pending(); ops != 0 || rqs != 0 {
		b.Fatalf("engine kept %d calls and %d requests: the stream is not joined", ops, rqs)
	}
	sec := b.Elapsed().Seconds()
	if events == 0 || sec == 0 {
		return
	}
	b.ReportMetric(float64(events)/sec, "events/s")
	b.ReportMetric(sec*1e9/float64(events), "ns/event")
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/float64(events), "allocs/event")
	b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/float64(events), "B/event")
}

func benchDiscard() func(any) { return func(any) {} }

func benchJSON() func(any) {
	return render.NewPrinter(io.Discard, true, false).Record
}

// benchText prints each record's story, as the default mode does.
func benchText() func(any) {
	return render.NewPrinter(io.Discard, false, false).Record
}

func never(int) bool      { return false }
func always(int) bool     { return true }
func oneInTen(i int) bool { return i%10 == 9 }

func BenchmarkDispatchHitDiscard(b *testing.B)   { benchDispatch(b, never, benchDiscard()) }
func BenchmarkDispatchMissDiscard(b *testing.B)  { benchDispatch(b, always, benchDiscard()) }
func BenchmarkDispatchMixedDiscard(b *testing.B) { benchDispatch(b, oneInTen, benchDiscard()) }
func BenchmarkDispatchHitJSON(b *testing.B)      { benchDispatch(b, never, benchJSON()) }
func BenchmarkDispatchMissJSON(b *testing.B)     { benchDispatch(b, always, benchJSON()) }
func BenchmarkDispatchMixedJSON(b *testing.B)    { benchDispatch(b, oneInTen, benchJSON()) }
func BenchmarkDispatchMissText(b *testing.B)     { benchDispatch(b, always, benchText()) }

// TestBenchStreamJoins checks the synthetic streams decode and join into the
// records they describe, so the benchmarks measure real work.
func TestBenchStreamJoins(t *testing.T) {
	var recs []*record.Syscall
	e := engine.New(kernel.Linux618(), func(r any) {
		if s, ok := r.(*record.Syscall); ok {
			recs = append(recs, s)
		}
	})
	var d Decoder
	calls, events := benchStream(t, 20, oneInTen)
	if events != 25 {
		t.Fatalf("20 calls (2 misses) and one path gave %d events, want 25", events)
	}
	for _, c := range calls {
		for _, raw := range c {
			if err := d.Dispatch(e, raw); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(recs) != 20 {
		t.Fatalf("got %d records, want 20", len(recs))
	}
	hit, miss := recs[0], recs[9]
	if hit.Cache.PagesHit != 1 || hit.Cache.PagesMissed != 0 || len(hit.Bios) != 0 || hit.Comm != "fio" {
		t.Errorf("hit record: %+v", hit)
	}
	if miss.Cache.PagesMissed != 1 || len(miss.Bios) != 1 || miss.Bios[0].D2CNs != 100_000 || miss.Path != "/var/tmp/bench/data" {
		t.Errorf("miss record: cache %+v bios %+v path %q", miss.Cache, miss.Bios, miss.Path)
	}
	if ops, rqs := e.Pending(); ops != 0 || rqs != 0 {
		t.Errorf("engine kept %d calls, %d requests", ops, rqs)
	}
}
