package demo

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/iopath/iopath/record"
	"github.com/iopath/iopath/render"
	"github.com/iopath/iopath/session"
	"github.com/iopath/iopath/tracer/kernel"
)

func init() {
	register(&Demo{Name: "write-1byte", Run: runWrite1,
		Short: "write(fd, \"x\", 1) to a new file: when does the byte reach the disk? (--fsync: made durable in the call)"})
}

func runWrite1(o *Options) error {
	fsync, expire, limit := o.Fsync, o.ExpireCentisecs, o.Timeout
	dir, fs, cleanup, err := setup(o, "its writes are never written back")
	if err != nil {
		return err
	}
	defer cleanup()
	if expire > 0 {
		// Recorded first: a SIGKILLed demo's value is put back by the next
		// run (session.RestoreStaleSysctls).
		restore, err := session.SetSysctl("vm/dirty_expire_centisecs", strconv.Itoa(expire))
		if err != nil {
			return err
		}
		defer restore()
	}
	path := filepath.Join(dir, "write-1byte.dat")
	bound, why := session.WritebackBound()
	kind := "write-1byte"
	if fsync {
		kind = "write-1byte-fsync"
	}
	w := o.Out
	fmt.Fprintln(w, "iopath demo write-1byte: when does write(fd, \"x\", 1) reach the disk?")
	fmt.Fprintf(w, "\nfile: %s (new), %s on %s (disk %s)\n", path, fs.Type, kernel.Dev(fs.Dev), fs.Disk)
	if fsync {
		fmt.Fprintln(w, "traced: open(O_CREAT|O_TRUNC), write(fd, \"x\", 1), fsync(fd), close(fd) in a child process")
	} else {
		fmt.Fprintf(w, "traced: open(O_CREAT|O_TRUNC), write(fd, \"x\", 1), close(fd) in a child process, then\n"+
			"the tracer waits for the kernel's periodic writeback (expected within %s: %s)\n", bound, why)
	}
	fmt.Fprintln(w)
	wait := limit
	if fsync {
		wait = 0
	}
	tr, err := traceChild(o, time.Second, wait, kind, path)
	if err != nil {
		return err
	}
	recs, sum := tr.recs, tr.sum
	dev, ino, err := session.Inode(path)
	if err != nil {
		return err
	}
	calls := FileRecords(recs, dev, ino)
	var write, sync *record.Syscall
	for _, c := range calls {
		switch c.Syscall {
		case "write":
			write = c
		case "fsync":
			sync = c
		}
	}
	if write == nil {
		return fmt.Errorf("the traced write was not seen (lost events: %d): run `iopath doctor`", sum.LostEvents)
	}
	var persisted []*record.Persisted
	var wbs []*record.Writeback
	for _, r := range recs {
		switch x := r.(type) {
		case *record.Persisted:
			if x.OpID == write.OpID {
				persisted = append(persisted, x)
			}
		case *record.Writeback:
			if x.Ino == ino {
				wbs = append(wbs, x)
			}
		}
	}
	for _, c := range calls {
		fmt.Fprint(w, render.SyscallStory(c))
	}
	for _, x := range wbs {
		fmt.Fprint(w, render.WritebackStory(x))
	}
	for _, p := range persisted {
		fmt.Fprint(w, render.PersistedStory(p))
	}
	if o.JSON {
		enc := json.NewEncoder(w)
		for _, c := range calls {
			enc.Encode(c)
		}
		for _, x := range wbs {
			enc.Encode(x)
		}
		for _, p := range persisted {
			enc.Encode(p)
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "write() returned %d byte after %s: it copied the byte into the page cache and dirtied %s in memory\n",
		write.ReturnedBytes, render.Duration(write.DurationNs), render.Count(uint64(write.DirtiedPages), "page"))
	fmt.Fprintf(w, "(index %s); no disk IO happened inside the call.\n", render.Ranges(write.DirtiedRanges))
	if len(persisted) == 0 {
		fmt.Fprintf(w, "The page did not reach the disk within %s (dirty pages still pending: %d).\n", limit, sum.DirtyPending)
		return nil
	}
	p := persisted[0]
	var bio record.Bio
	for _, x := range wbs {
		if len(x.Bios) > 0 && x.Bios[0].Sector == p.Sector {
			bio = x.Bios[0]
		}
	}
	if sync != nil && p.ByOpID == sync.OpID {
		fmt.Fprintf(w, "fsync() wrote it itself, in the caller's context: the page reached the disk %s after the write,\n", render.Duration(p.DirtyToDiskNs))
		fmt.Fprintf(w, "in a %s %s request at sector %d (device time %s); fsync returned after %s.\n",
			bio.Rwbs, render.Bytes(uint64(bio.RequestBytes)), p.Sector, render.Duration(bio.D2CNs), render.Duration(sync.DurationNs))
		return nil
	}
	fmt.Fprintf(w, "The page reached the disk %s after the write: the flusher %s (tid %d) wrote it for reason %q\n",
		render.Duration(p.DirtyToDiskNs), p.Worker, p.WorkerTid, p.Reason)
	fmt.Fprintf(w, "in a %s request of %s at sector %d (device time %s).\n", bio.Rwbs, render.Bytes(uint64(bio.RequestBytes)), p.Sector, render.Duration(bio.D2CNs))
	if p.Reason == record.ReasonPeriodic {
		fmt.Fprintf(w, "That delay is the kernel's: a dirty inode is written once it is older than vm.dirty_expire_centisecs,\n"+
			"checked every vm.dirty_writeback_centisecs (%s). Call fsync(2) to make data durable now (--fsync).\n", why)
	}
	return nil
}
