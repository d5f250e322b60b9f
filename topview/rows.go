// Package topview turns aggregate snapshots into what `iopath top` and
// `iopath trace --interval` print: one JSON object per interval, a text
// table, and the terminal UI (bubbletea).
package topview

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/iopath/iopath/aggregate"
)

// By is what the rows are: processes or files.
type By string

// Row kinds.
const (
	ByProcess By = "process"
	ByFile    By = "file"
)

// SortKey orders the rows (largest first).
type SortKey string

// Sort keys.
const (
	SortDisk     SortKey = "disk"
	SortCalls    SortKey = "calls"
	SortLatency  SortKey = "latency"
	SortThrottle SortKey = "throttle"
)

// SortKeys lists the keys in the order the UI cycles through them.
var SortKeys = []SortKey{SortDisk, SortCalls, SortLatency, SortThrottle}

// ParseSort checks a --sort value.
func ParseSort(s string) (SortKey, error) {
	for _, k := range SortKeys {
		if string(k) == s {
			return k, nil
		}
	}
	return "", fmt.Errorf("--sort %q: choose one of disk, calls, latency, throttle", s)
}

// ParseBy checks a --by value.
func ParseBy(s string) (By, error) {
	switch By(s) {
	case ByProcess, ByFile:
		return By(s), nil
	}
	return "", fmt.Errorf("--by %q: choose process or file", s)
}

// Row is one process or file over an interval, with its cumulative dirty
// pages still pending.
type Row struct {
	Pid    uint32 // processes
	Comm   string
	Exited bool
	File   aggregate.FileKey // files
	Name   string
	IO     aggregate.IO // the interval
	Cum    aggregate.IO // since the start (DirtyPending)
}

// active: the row did IO in the interval, or its process exited (or a
// part of it ended: an exec, a rename) in the interval after doing IO
// earlier in the run. A process's exit is then always shown, with its
// totals, in the interval its entry was retired, whether or not its last
// IO was read before (a 50 ms interval often ends between dd's last write
// and its exit).
func (r *Row) active() bool {
	return ioActive(&r.IO) || r.Exited && ioActive(&r.Cum)
}

func ioActive(io *aggregate.IO) bool {
	return io.AllCalls() > 0 || io.DiskBytes() > 0 || io.CleanedPages > 0 || io.ThrottleNs > 0
}

func (r *Row) key(k SortKey) float64 {
	switch k {
	case SortCalls:
		return float64(r.IO.AllCalls())
	case SortLatency:
		return r.IO.MaxP99()
	case SortThrottle:
		return float64(r.IO.ThrottleNs)
	}
	return float64(r.IO.DiskBytes())
}

// Rows returns the active rows of the interval d (cur: the cumulative
// snapshot it ends at), sorted by k, largest first; ties by pid or inode.
func Rows(d, cur *aggregate.Snapshot, by By, k SortKey) []Row {
	var rows []Row
	if by == ByFile {
		for key, f := range d.Files {
			r := Row{File: key, Name: f.Name, IO: f.IO}
			if c := cur.Files[key]; c != nil {
				r.Cum = c.IO
			}
			if r.active() {
				rows = append(rows, r)
			}
		}
	} else {
		for key, p := range d.Procs {
			r := Row{Pid: p.Pid, Comm: p.Comm, Exited: p.Exited, IO: p.IO}
			if c := cur.Procs[key]; c != nil {
				r.Cum = c.IO
			}
			if r.active() {
				rows = append(rows, r)
			}
		}
	}
	slices.SortFunc(rows, func(a, b Row) int {
		if c := cmp.Compare(b.key(k), a.key(k)); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Pid, b.Pid); c != 0 {
			return c
		}
		if c := cmp.Compare(a.File.Ino, b.File.Ino); c != 0 {
			return c
		}
		return cmp.Compare(a.File.Gen, b.File.Gen)
	})
	return rows
}

// DevName names a filesystem's dev_t as MAJ:MIN.
func DevName(dev uint32) string { return fmt.Sprintf("%d:%d", dev>>20, dev&(1<<20-1)) }

// Label is a row's first column: "pid comm" or the file's name and inode
// (and its generation with gen: another row has the same inode number).
func (r *Row) Label(by By, gen bool) string {
	if by == ByFile {
		name := r.Name
		if name == "" {
			name = "?"
		}
		if gen {
			return fmt.Sprintf("%s (%s ino %d gen %d)", safe(name), DevName(r.File.Dev), r.File.Ino, r.File.Gen)
		}
		return fmt.Sprintf("%s (%s ino %d)", safe(name), DevName(r.File.Dev), r.File.Ino)
	}
	s := fmt.Sprintf("%d %s", r.Pid, safe(r.Comm))
	if r.Exited {
		s += " (exited)"
	}
	return s
}

// reusedInodes returns the (dev, ino) of files with more than one row.
func reusedInodes(rs []Row) map[aggregate.FileKey]bool {
	n := map[aggregate.FileKey]int{}
	for i := range rs {
		n[aggregate.FileKey{Dev: rs[i].File.Dev, Ino: rs[i].File.Ino}]++
	}
	out := map[aggregate.FileKey]bool{}
	for k, c := range n {
		if c > 1 {
			out[k] = true
		}
	}
	return out
}

// safe keeps a name printable (a file name may hold control bytes).
func safe(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '?'
		}
		return r
	}, s)
}
