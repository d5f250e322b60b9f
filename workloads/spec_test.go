package workloads

import (
	"strings"
	"testing"
	"time"
)

func TestParseSize(t *testing.T) {
	good := map[string]int64{
		"0": 0, "1": 1, "512": 512, "4k": 4096, "4K": 4096, "4KiB": 4096, "4kb": 4096,
		"64M": 64 << 20, "64m": 64 << 20, "1g": 1 << 30, "1GiB": 1 << 30, "2t": 2 << 40, "100b": 100,
	}
	good[" 8k "] = 8192 // spaces around a size are trimmed
	for in, want := range good {
		got, err := ParseSize(in)
		if err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "k", "-1", "1.5m", "4x", "4ki", "1e3", "9999999999999999999", "8388608t"} {
		if n, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", in, n)
		} else if !strings.Contains(err.Error(), "size") {
			t.Errorf("ParseSize(%q) error %q does not say what a size is", in, err)
		}
	}
}

func TestFormatSize(t *testing.T) {
	for n, want := range map[int64]string{1: "1B", 1000: "1000B", 4096: "4KiB", 64 << 20: "64MiB", 1 << 30: "1GiB", 1536: "1536B"} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
		if back, err := ParseSize(FormatSize(n)); err != nil || back != n {
			t.Errorf("ParseSize(FormatSize(%d)) = %d, %v", n, back, err)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, k := range Kinds() {
		for _, e := range Engines() {
			if err := (Spec{Kind: k, Engine: e}).Validate(); err != nil {
				t.Errorf("Spec{%s, %s}: %v", k, e, err)
			}
		}
	}
	bad := []struct {
		spec Spec
		want string // a fragment of the error, naming the cause or the fix
	}{
		{Spec{Kind: "read-2bytes"}, `unknown workload kind "read-2bytes": choose one of read-1byte, small-write`},
		{Spec{}, "unknown workload kind"},
		{Spec{Kind: KindSeqRead, Engine: "aio"}, `unknown engine "aio": choose one of psync, sync, mmap, stdio`},
		{Spec{Kind: KindSeqRead, BlockSize: 8192, FileSize: 4096}, "larger than the file size"},
		{Spec{Kind: KindSeqRead, BlockSize: -1}, "negative"},
		{Spec{Kind: KindSeqRead, FileSize: -1}, "negative"},
		{Spec{Kind: KindSeqRead, Count: -1}, "negative"},
		{Spec{Kind: KindSeqRead, Duration: -time.Second}, "negative"},
		{Spec{Kind: KindSmallWrite, FsyncEvery: -1}, "positive number"},
		{Spec{Kind: KindRead1Byte, BlockSize: 2}, "use seq-read --bs 2"},
		{Spec{Kind: KindSeqRead, Random: true}, "use rand-read or rand-write"},
		{Spec{Kind: KindSmallWrite, Random: true}, "needs --overwrite"},
		{Spec{Kind: KindRandWrite, Overwrite: true}, "--overwrite applies to small-write and seq-write"},
		{Spec{Kind: KindSeqRead, FsyncEvery: 1}, "apply to write workloads"},
		{Spec{Kind: KindSeqWrite, FsyncEvery: 1, FdatasyncEvery: 1}, "not both"},
		{Spec{Kind: KindSeqRead, Direct: true, Engine: EngineMmap}, "O_DIRECT needs the psync, sync, libaio or io_uring engine"},
		{Spec{Kind: KindSeqRead, Direct: true, Engine: EngineStdio}, "O_DIRECT needs the psync, sync, libaio or io_uring engine"},
		{Spec{Kind: KindSeqRead, Fadvise: "willneed"}, "choose random or sequential"},
		{Spec{Kind: KindRandRead, Engine: EngineLibaio, IODepth: 100000}, "--iodepth 100000 is out of range: give 1 to 1024"},
		{Spec{Kind: KindRandRead, Engine: EngineIOUring, IODepth: -1}, "--iodepth -1 is out of range"},
		{Spec{Kind: KindRandRead, IODepth: 16}, "--iodepth 16 needs --engine libaio or io_uring"},
		{Spec{Kind: KindRandRead, Engine: EngineLibaio, SQPoll: true}, "--uring-async, --sqpoll and --fixed-files are io_uring options: add --engine io_uring"},
		{Spec{Kind: KindRandRead, UringAsync: true}, "--uring-async, --sqpoll and --fixed-files are io_uring options"},
		{Spec{Kind: KindRandRead, Engine: EnginePsync, UringFixed: true}, "--uring-async, --sqpoll and --fixed-files are io_uring options"},
		{Spec{Kind: KindRandRead, Engine: EngineLibaio, IODepth: 8, IODepthBatch: 8, UringLink: 4}, "--uring-link is an io_uring option: add --engine io_uring"},
		{Spec{Kind: KindRandRead, Engine: EngineIOUring, IODepth: 8, IODepthBatch: 4, UringLink: 8}, "--uring-link 8 is out of range: a chain is 2 to --iodepth-batch (4) requests of one submit call"},
		{Spec{Kind: KindRandRead, Engine: EngineIOUring, IODepth: 8, IODepthBatch: 8, UringLink: 1}, "--uring-link 1 is out of range"},
		{Spec{Kind: KindRandRead, NumJobs: 1000}, "--numjobs 1000 is out of range"},
		{Spec{Kind: KindRandRead, Engine: EngineLibaio, IODepth: 8, IODepthCompleteMin: 9}, "--iodepth-complete-min 9 is out of range: give 1 to --iodepth (8)"},
		{Spec{Kind: KindSeqWrite, NumJobs: 2}, "use --overwrite (or rand-write), or --numjobs 1"},
		{Spec{Kind: KindSeqRead, Dir: "/tmp", File: "/tmp/x"}, "either --dir or --file"},
		{Spec{Kind: KindSeqRead, Engine: EngineMmap, Madvise: "dontneed"}, `unknown --madvise "dontneed": choose random, sequential or willneed`},
		{Spec{Kind: KindSeqRead, Madvise: MadviseRandom}, "--madvise applies to --engine mmap"},
		{Spec{Kind: KindSeqRead, Engine: EngineMmap, MsyncEvery: 1}, "--msync applies to write workloads"},
		{Spec{Kind: KindSeqWrite, MsyncEvery: 1}, "--msync applies to write workloads with --engine mmap"},
		{Spec{Kind: KindSeqWrite, Engine: EngineMmap, MsyncEvery: -1}, "positive number"},
		{Spec{Kind: KindSeqWrite, Engine: EngineMmap, MsyncEvery: 1, FsyncEvery: 1}, "choose one of --msync"},
	}
	for _, c := range bad {
		err := c.spec.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want an error containing %q", c.spec, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("%+v: error spans lines: %q", c.spec, err)
		}
	}
}

func TestDefaults(t *testing.T) {
	for _, c := range []struct {
		kind     string
		bs, size int64
	}{{KindRead1Byte, 1, 1 << 20}, {KindSmallWrite, 1, 1 << 20}, {KindSeqRead, 4096, 64 << 20}, {KindRandWrite, 4096, 64 << 20}} {
		s := Spec{Kind: c.kind}
		s.fillDefaults()
		if s.BlockSize != c.bs || s.defaultFileSize() != c.size || s.Engine != EnginePsync || s.Seed != DefaultSeed {
			t.Errorf("%s defaults: bs %d size %d engine %s seed %d", c.kind, s.BlockSize, s.defaultFileSize(), s.Engine, s.Seed)
		}
	}
}
