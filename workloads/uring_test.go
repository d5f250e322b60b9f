package workloads

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestUAPILayouts checks the Go structs against the kernel's uapi sizes and
// the offsets of the fields the engines set.
func TestUAPILayouts(t *testing.T) {
	var q uringSQE
	var c uringCQE
	var a iocb
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"io_uring_params", unsafe.Sizeof(uringParams{}), 120},
		{"io_uring_sqe", unsafe.Sizeof(q), 64},
		{"sqe.fd", unsafe.Offsetof(q.fd), 4},
		{"sqe.off", unsafe.Offsetof(q.off), 8},
		{"sqe.addr", unsafe.Offsetof(q.addr), 16},
		{"sqe.len", unsafe.Offsetof(q.len), 24},
		{"sqe.user_data", unsafe.Offsetof(q.userData), 32},
		{"io_uring_cqe", unsafe.Sizeof(c), 16},
		{"cqe.res", unsafe.Offsetof(c.res), 8},
		{"iocb", unsafe.Sizeof(a), 64},
		{"iocb.aio_lio_opcode", unsafe.Offsetof(a.opcode), 16},
		{"iocb.aio_fildes", unsafe.Offsetof(a.fildes), 20},
		{"iocb.aio_buf", unsafe.Offsetof(a.buf), 24},
		{"iocb.aio_offset", unsafe.Offsetof(a.offset), 40},
		{"io_event", unsafe.Sizeof(ioEvent{}), 32},
	} {
		if c.got != c.want {
			t.Errorf("%s: %d, want %d", c.name, c.got, c.want)
		}
	}
}

// testFile writes size bytes of random data to a new file and opens it.
func testFile(t *testing.T, size int) (*os.File, []byte) {
	t.Helper()
	data := make([]byte, size)
	rand.NewChaCha8([32]byte{7}).Read(data)
	path := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, data
}

// The io_uring engine with --uring-async and with --sqpoll, for newTestEngine.
const (
	uringAsync  = "io_uring-async"
	uringSQPoll = "io_uring-sqpoll"
	uringFixed  = "io_uring-fixed" // --fixed-files
	uringLinked = "io_uring-link"  // --uring-link 2
	// SQPOLL on a registered file, as before 5.11 (IOSQE_FIXED_FILE).
	uringSQPollFixed = "io_uring-sqpoll-fixed"
)

// newTestEngine builds the named async engine over f with depth slots of
// bs bytes, or skips when the kernel refuses it to this user.
func newTestEngine(t *testing.T, name string, f *os.File, write bool, depth int, bs int64) (asyncEngine, []byte) {
	t.Helper()
	buf, err := unix.Mmap(-1, 0, depth*int(bs), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	var eng asyncEngine
	switch name {
	case EngineIOUring, uringAsync, uringSQPoll, uringSQPollFixed, uringFixed, uringLinked:
		var e *uringEngine
		opts := uringOpts{async: name == uringAsync, sqpoll: name == uringSQPoll || name == uringSQPollFixed,
			fixed: name == uringFixed || name == uringSQPollFixed}
		if name == uringLinked {
			opts.link = 2
		}
		e, err = newUringEngine(depth, int(f.Fd()), write, buf, bs, bs, opts)
		if err == nil {
			eng = e
		}
	case EngineLibaio:
		var e *aioEngine
		e, err = newAioEngine(depth, int(f.Fd()), write, buf, bs, bs)
		if err == nil {
			eng = e
		}
	}
	var refused *uringRefused
	if errors.As(err, &refused) && os.Geteuid() != 0 {
		t.Skipf("%v (not root)", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := eng.close(); err != nil {
			t.Error(err)
		}
		unix.Munmap(buf)
	})
	return eng, buf
}

// TestRingReads reads a file through each engine with more requests than
// ring entries (so the rings wrap many times), completions reaped in
// batches, and checks each slot's buffer holds the bytes of its offset.
func TestRingReads(t *testing.T) {
	const bs, depth, reads = 512, 8, 1000
	for _, name := range []string{EngineIOUring, uringAsync, uringSQPoll, uringSQPollFixed, uringFixed, uringLinked, EngineLibaio} {
		t.Run(name, func(t *testing.T) {
			f, data := testFile(t, 64<<10)
			eng, buf := newTestEngine(t, name, f, false, depth, bs)
			eng.reset(true)
			rng := rand.New(rand.NewPCG(1, 2))
			offAt := make([]int64, depth)
			free := []int{}
			for s := range depth {
				free = append(free, s)
			}
			out := make([]completion, depth)
			done, inflight := 0, 0
			for done < reads {
				n := 0
				for ; len(free) > 0 && done+inflight+n < reads; n++ {
					s := free[len(free)-1]
					free = free[:len(free)-1]
					offAt[s] = rng.Int64N(int64(len(data) - bs)) // unaligned: buffered IO takes any offset
					eng.prep(s, offAt[s])
				}
				if n > 0 {
					k, err := eng.submit(n)
					if err != nil || k != n {
						t.Fatalf("submit(%d) = %d, %v", n, k, err)
					}
					inflight += k
				}
				m, err := eng.wait(1, out[:inflight])
				if err != nil || m < 1 || m > inflight {
					t.Fatalf("wait: %d of %d, %v", m, inflight, err)
				}
				for _, c := range out[:m] {
					s := int(c.slot)
					if c.res != bs {
						t.Fatalf("slot %d: result %d, want %d", s, c.res, bs)
					}
					if got, want := buf[s*bs:(s+1)*bs], data[offAt[s]:offAt[s]+bs]; !bytes.Equal(got, want) {
						t.Fatalf("slot %d: the buffer does not hold the file's bytes at offset %d", s, offAt[s])
					}
					free = append(free, s)
				}
				inflight -= m
				done += m
			}
			var submitted int64
			for _, c := range eng.calls() {
				if c.Name == "io_submit" || c.Name == "io_uring_enter (submit)" {
					submitted = c.Bytes
				}
			}
			if submitted != reads*bs {
				t.Errorf("counted %d bytes submitted, want %d: %+v", submitted, reads*bs, eng.calls())
			}
		})
	}
}

// TestRingWriteAndError writes through each engine and checks the file,
// then submits a read on a write-only descriptor: the request completes
// with -EBADF, it does not fail the submit.
func TestRingWriteAndError(t *testing.T) {
	const bs = 4096
	for _, name := range []string{EngineIOUring, EngineLibaio} {
		t.Run(name, func(t *testing.T) {
			f, _ := testFile(t, 4*bs)
			eng, buf := newTestEngine(t, name, f, true, 2, bs)
			rand.NewChaCha8([32]byte{9}).Read(buf)
			eng.prep(0, 3*bs)
			eng.prep(1, 0)
			if k, err := eng.submit(2); k != 2 || err != nil {
				t.Fatalf("submit: %d, %v", k, err)
			}
			out := make([]completion, 2)
			n := 0
			for n < 2 {
				m, err := eng.wait(1, out[n:])
				if err != nil {
					t.Fatal(err)
				}
				n += m
			}
			for _, c := range out {
				if c.res != bs {
					t.Errorf("slot %d: result %d", c.slot, c.res)
				}
			}
			got := make([]byte, 4*bs)
			f.ReadAt(got, 0)
			if !bytes.Equal(got[3*bs:], buf[:bs]) || !bytes.Equal(got[:bs], buf[bs:2*bs]) {
				t.Error("the file does not hold the written slots")
			}

			wo, err := os.OpenFile(f.Name(), os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer wo.Close()
			bad, _ := newTestEngine(t, name, wo, false, 1, bs)
			bad.prep(0, 0)
			k, err := bad.submit(1)
			if name == EngineLibaio && errors.Is(err, unix.EBADF) {
				return // io_submit checks the fd's mode at submission
			}
			if k != 1 || err != nil {
				t.Fatalf("submit of a read on a write-only fd: %d, %v", k, err)
			}
			if m, err := bad.wait(1, out[:1]); m != 1 || err != nil || out[0].res != -int64(unix.EBADF) {
				t.Errorf("completion %+v (%d, %v), want result -EBADF", out[0], m, err)
			}
		})
	}
}

// A full SQ ring (its entries queued, none consumed): with SQPOLL, next
// publishes them and waits until the kernel's thread took some (on
// Debian 5.10 the thread moved the head only after the batch's completions
// were reaped, and a nil SQE was a panic); without SQPOLL the caller queued
// more than the ring holds, an error. The SQEs are zeroed: IORING_OP_NOP.
func TestRingFullSQ(t *testing.T) {
	for _, c := range []struct {
		name           string
		sqpoll, noWait bool // noWait: as before 5.11, no IORING_ENTER_SQ_WAIT (wake and read the head)
	}{{"plain", false, false}, {"sqpoll", true, false}, {"sqpoll-wakeup", true, true}} {
		sqpoll := c.sqpoll
		var flags uint32
		if sqpoll {
			flags = uringSetupSQPoll
		}
		t.Run(c.name, func(t *testing.T) {
			r, err := newRing(4, flags)
			if err != nil {
				t.Skipf("io_uring refused here: %v", err)
			}
			defer r.close()
			if c.noWait {
				r.features &^= uringFeatSQPollNonfixed
			}
			for i := range r.entries {
				if _, err := r.next(); err != nil {
					t.Fatalf("SQE %d of an empty ring of %d: %v", i, r.entries, err)
				}
			}
			q, err := r.next()
			if !sqpoll {
				if q != nil || err == nil || !strings.Contains(err.Error(), "SQ ring full") {
					t.Errorf("next on a full ring: %v, %v", q, err)
				}
				return
			}
			if q == nil || err != nil {
				t.Fatalf("next on a full SQPOLL ring: %v, %v", q, err)
			}
			if h := atomic.LoadUint32(r.sqHead); h == 0 {
				t.Errorf("SQ head %d after the wait", h)
			}
			t.Logf("waited with %d io_uring_enter calls (features %#x)", r.sqWaits, r.features)
		})
	}
}
