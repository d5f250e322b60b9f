package main

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/iopath/iopath/tracer"
)

// flushLine tells what an fsync-family call did to the device's volatile
// write cache when no flush request appears among its bios.
func flushLine(outcome string) string {
	switch outcome {
	case tracer.FlushNotNeeded:
		return "device cache: write through (queue/write_cache): no flush was needed"
	case tracer.FlushNone:
		return "device cache: write back, but no flush request served this call (the data may still be in the device's cache)"
	case tracer.FlushNotRequested:
		return "device cache: not flushed (sync_file_range starts or waits for writeback only; it never flushes the device cache)"
	case tracer.FlushNoDevice:
		return "device cache: none (no block device)"
	}
	return ""
}

// unattributedText details the summary's unattributed bios: their bytes
// and why the kernel says they were queued ("" when there are none).
func unattributedText(s *tracer.Summary) string {
	if s.UnattributedBios == 0 {
		return ""
	}
	causes := make([]string, 0, len(s.UnattributedCauses))
	for k := range s.UnattributedCauses {
		causes = append(causes, k)
	}
	sort.Strings(causes)
	var parts []string
	for _, k := range causes {
		c := s.UnattributedCauses[k]
		parts = append(parts, fmt.Sprintf("%s %d (%s)", k, c.Bios, human(c.Bytes)))
	}
	return fmt.Sprintf("unattributed bios (queued by traced processes outside any traced call): %s: %s\n",
		human(s.UnattributedBytes), strings.Join(parts, ", "))
}

// pidNote says on stderr what -p follows: the process, its threads and
// the children it forks from now on; not processes other ones fork (a
// database's workers are often forked by its postmaster, not by the
// backend one traces).
func pidNote(pids []int) string {
	ps := make([]string, len(pids))
	for i, p := range pids {
		ps[i] = strconv.Itoa(p)
	}
	return "iopath: -p follows children of PID " + strings.Join(ps, ",") +
		"; processes forked by others are not traced: use --comm or -p of the parent"
}
