package tracer

import (
	"context"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/iopath/iopath/bpf"
	"github.com/iopath/iopath/internal/testutil"
	"github.com/iopath/iopath/record"
)

// A direct bio names its io_uring request by itself (bpf/uring.c
// uring_dio_bio: bi_private's first word is the request), so a request
// keeps its bio where the kernel skipped the iomap_dio_rw_begin run that
// names it (7.2's 1-vCPU VM skipped 5 of 400, each bio then going to the
// worker's previous request). The skip is made here by replacing that
// program with one that does nothing: fio's registered-file reads punted
// to io-wq (force_async) fire no io_uring_file_get either, so the bio is
// the only thing left to name each request. Every request must have
// exactly its 4 KiB bio; with the real program too.
func TestUringBioNamesRequest(t *testing.T) {
	testutil.NeedRoot(t)
	fio, err := exec.LookPath("fio")
	if err != nil {
		t.Skip("needs fio (scripts/setup.sh installs it)")
	}
	const n = 400
	for _, tc := range []struct {
		name string
		noop []string
	}{
		{"dio begin skipped", []string{bpf.IopathProgUringDioBegin}},
		{"dio begin ran", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := testutil.ColdFile(t, testutil.DiskDir(t), "uring", 16<<20)
			var mu sync.Mutex
			var reqs []*record.Request
			tr, err := New(Options{Comm: "fio", noopProgs: tc.noop}, func(r any) {
				if q, ok := r.(*record.Request); ok && q.Path == file {
					mu.Lock()
					reqs = append(reqs, q)
					mu.Unlock()
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { tr.Close() })
			for _, h := range tr.Hooks {
				if (h.Hook == "io_uring" || h.Hook == "io_uring_dio") && h.Mechanism == None {
					t.Skipf("hook %s not attached on this kernel", h.Hook)
				}
			}
			ctx, cancel := context.WithCancel(context.Background())
			ran := make(chan error, 1)
			go func() { ran <- tr.Run(ctx, 2*time.Second) }()
			out, err := exec.Command(fio, "--name=uring", "--filename="+file, "--size=16m", "--ioengine=io_uring",
				"--direct=1", "--rw=randread", "--bs=4k", "--iodepth=16", "--number_ios=400",
				"--registerfiles=1", "--force_async=1", "--output-format=terse").CombinedOutput()
			cancel()
			if rerr := <-ran; rerr != nil {
				t.Fatal(rerr)
			}
			if err != nil {
				t.Fatalf("fio: %v\n%s", err, out)
			}
			bad := 0
			for _, q := range reqs {
				if len(q.Bios) != 1 || q.Bios[0].Bytes != 4096 || q.Worker != record.WorkerIOWQ {
					if bad++; bad <= 5 {
						t.Errorf("request %d (worker %s): %d bios %+v", q.OpID, q.Worker, len(q.Bios), q.Bios)
					}
				}
			}
			c := tr.Counters()
			t.Logf("%d requests, %d without exactly their bio; spare_uring_dio %d", len(reqs), bad, c["spare_uring_dio"])
			if len(reqs) != n || bad != 0 {
				t.Errorf("%d request records for %d reads, %d without exactly their bio", len(reqs), n, bad)
			}
		})
	}
}
