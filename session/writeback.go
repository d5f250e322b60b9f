package session

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/iopath/iopath/render"
	"github.com/iopath/iopath/tracer"
	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// SysctlInt reads an integer from /proc/sys (e.g. "vm/dirty_expire_centisecs").
func SysctlInt(name string) (int, error) {
	b, err := os.ReadFile("/proc/sys/" + name)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// WritebackBound is the kernel's expected worst delay for periodic writeback:
// dirty_expire_centisecs (age at which a dirty inode is written) plus
// dirty_writeback_centisecs (how often the flusher wakes), mm/page-writeback.c.
func WritebackBound() (time.Duration, string) {
	exp, err1 := SysctlInt("vm/dirty_expire_centisecs")
	wb, err2 := SysctlInt("vm/dirty_writeback_centisecs")
	if err1 != nil || err2 != nil {
		return 0, "vm.dirty_* sysctls unreadable"
	}
	d := time.Duration(exp+wb) * 10 * time.Millisecond
	return d, fmt.Sprintf("vm.dirty_expire_centisecs=%d + vm.dirty_writeback_centisecs=%d", exp, wb)
}

// WaitWriteback keeps the trace running until every page the traced calls
// dirtied was seen written (or removed), or limit passes. When dirty-page
// tracking overflowed it waits on the kernel's count instead (see
// tracer.DirtyLeft) and says so. It shows a progress bar on a terminal.
func WaitWriteback(ctx context.Context, t *tracer.Tracer, limit time.Duration, errw io.Writer) {
	bound, why := WritebackBound()
	start := time.Now()
	// Give the ring buffer a moment so the last calls' records are counted.
	select {
	case <-ctx.Done():
		return
	case <-time.After(200 * time.Millisecond):
	}
	left := t.DirtyLeft()
	pending := left.Pages
	whose := overflowNote(left)
	if pending == 0 {
		if left.Overflowed > 0 && left.Unavailable == left.Files {
			fmt.Fprintf(errw, "iopath: --wait-writeback: nothing to wait on%s\n", whose)
			return
		}
		if left.Overflowed > 0 {
			fmt.Fprintf(errw, "iopath: --wait-writeback: the kernel reports no dirty page left in the files the traced command wrote%s\n", whose)
			return
		}
		if n := t.Engine.MemoryOnlyWrites(); n > 0 {
			fmt.Fprintf(errw, "iopath: --wait-writeback: the traced command's %d writes went to a memory-only filesystem (tmpfs): nothing is ever written back\n", n)
			return
		}
		fmt.Fprintln(errw, "iopath: --wait-writeback: the traced command left no dirty pages to wait for")
		return
	}
	fmt.Fprintf(errw, "iopath: waiting up to %s for %s to reach the disk (kernel bound %s: %s)%s\n", limit, render.Count(pending, "dirty page"), bound, why, whose)
	var bar *progressbar.ProgressBar
	if f, ok := errw.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		bar = progressbar.NewOptions64(int64(pending), progressbar.OptionSetWriter(errw),
			progressbar.OptionSetDescription("dirty pages written"), progressbar.OptionShowCount(),
			progressbar.OptionSetElapsedTime(true), progressbar.OptionClearOnFinish())
	}
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		left := t.DirtyLeft()
		p := left.Pages
		if bar != nil {
			bar.Describe(fmt.Sprintf("still dirty %d, waited %s of bound %s", p, time.Since(start).Round(time.Second), bound))
			bar.Set64(int64(pending) - int64(min(p, pending)))
		}
		if p == 0 {
			if bar != nil {
				bar.Finish()
			}
			fmt.Fprintf(errw, "iopath: all dirty pages reached the disk after %s%s\n", time.Since(start).Round(10*time.Millisecond), overflowNote(left))
			return
		}
		if time.Since(start) > limit {
			fmt.Fprintf(errw, "iopath: --wait-writeback: %d pages still dirty after %s%s\n", p, limit, overflowNote(left))
			return
		}
		select {
		case <-ctx.Done():
			fmt.Fprintf(errw, "iopath: --wait-writeback interrupted with %s still dirty%s\n", render.Count(p, "page"), overflowNote(left))
			return
		case <-tick.C:
		}
	}
}

// overflowNote says whose count of dirty pages a message gives when
// dirty-page tracking overflowed ("" when it did not), and which written
// files are in no count (deleted: their pages were dropped; unavailable:
// they cannot be opened).
func overflowNote(d tracer.DirtyLeft) string {
	switch {
	case d.Overflowed == 0:
		return ""
	case d.Kernel:
		files := render.Count(uint64(d.Files), "written file")
		var also string
		if d.Deleted > 0 {
			also += fmt.Sprintf("; %d deleted since (their pages were dropped)", d.Deleted)
		}
		if d.Unavailable > 0 {
			also += fmt.Sprintf("; the count of %d is unavailable (the file cannot be opened: not waited on)", d.Unavailable)
		}
		return fmt.Sprintf(" (dirty-page tracking overflowed: %s not followed, raise --max-dirty-pages; counted by the kernel: cachestat of %s%s)", render.Count(d.Overflowed, "folio"), files, also)
	}
	return fmt.Sprintf(" (dirty-page tracking overflowed: %s not followed, raise --max-dirty-pages; iopath's count, which cannot reach 0: the kernel's count of a written file is unavailable)", render.Count(d.Overflowed, "folio"))
}
