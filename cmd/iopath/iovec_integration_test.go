package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/iopath/iopath/tracer"
	"golang.org/x/sys/unix"
)

const iovHelperEnv = "IOPATH_IOV_HELPER"

// iovCount and iovLen shape the helper's vectored calls: more iovecs than
// the compat build's COMPAT_IOVS (8, bpf/op.h).
const iovCount, iovLen = 12, 4096

// TestIovHelper is not a test: run by TestTraceVectoredRequestedBytes
// (under iopath trace) with IOPATH_IOV_HELPER=FILE, it preadv's the file's
// first iovCount*iovLen bytes into iovCount buffers, then pwritev's them
// back at the same offset.
func TestIovHelper(t *testing.T) {
	path := os.Getenv(iovHelperEnv)
	if path == "" {
		t.Skip("the traced command of TestTraceVectoredRequestedBytes")
	}
	if err := iovHelper(path); err != nil {
		fmt.Fprintln(os.Stderr, "iov helper:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func iovHelper(path string) error {
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	bufs := make([][]byte, iovCount)
	for i := range bufs {
		bufs[i] = make([]byte, iovLen)
	}
	if n, err := unix.Preadv(fd, bufs, 0); err != nil || n != iovCount*iovLen {
		return fmt.Errorf("preadv: %d bytes: %w", n, err)
	}
	if n, err := unix.Pwritev(fd, bufs, 0); err != nil || n != iovCount*iovLen {
		return fmt.Errorf("pwritev: %d bytes: %w", n, err)
	}
	return nil
}

// A preadv and a pwritev of 12 iovecs say they asked for the sum of all 12
// (requested_bytes, README: "vectored: the sum of its iovecs"). The compat
// build (kernels before 5.17) sums the first 8, as the README says. Before,
// both builds summed 8: 32768 requested, 49152 returned (a breaker's
// preadv of 9).
func TestTraceVectoredRequestedBytes(t *testing.T) {
	needRoot(t)
	f := filepath.Join(diskDir(t), "iov.dat")
	if err := os.WriteFile(f, make([]byte, 2*iovCount*iovLen), 0o644); err != nil {
		t.Fatal(err)
	}
	want := uint64(iovCount * iovLen)
	if len(tracer.CompatReasons()) > 0 {
		want = 8 * iovLen // the compat build's COMPAT_IOVS
	}
	tr := traceCmd(t, "--all", "--", "env", iovHelperEnv+"="+f, os.Args[0], "-test.run=^TestIovHelper$")
	seen := map[string]bool{}
	for _, c := range tr.calls {
		if c.Path != f || (c.Syscall != "preadv" && c.Syscall != "pwritev") {
			continue
		}
		seen[c.Syscall] = true
		if c.RequestedBytes != want {
			t.Errorf("%s of %d iovecs of %d bytes: requested_bytes %d, want %d", c.Syscall, iovCount, iovLen, c.RequestedBytes, want)
		}
	}
	if !seen["preadv"] || !seen["pwritev"] {
		t.Fatalf("records of preadv %v, pwritev %v; stderr: %s", seen["preadv"], seen["pwritev"], tr.stderr)
	}
}
