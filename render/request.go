package render

import (
	"slices"
	"strconv"
	"strings"

	"github.com/iopath/iopath/record"
)

// RequestStory is an asynchronous request's text story, told under its
// submission call (SubmissionLine): what it asked for and its result, when
// the kernel completed it and the application reaped it (after its
// submission), how many requests were in flight at the device at its issue,
// its page cache and its bios with their device time. "" for a request that
// touched no disk (no bio, no page missed or dirtied): the JSON record
// still has it.
func RequestStory(r *record.Request) string {
	if !r.TouchedDisk() {
		return ""
	}
	c := r.Cache
	var b strings.Builder
	b.Grow(512)
	unum := func(v uint64) string { return strconv.FormatUint(v, 10) }
	target := Safe(r.Path)
	if target == "" {
		target = "dev " + r.Dev + " ino " + unum(r.Ino)
	}
	result := "result unavailable"
	if r.Result.Known {
		result = r.Result.Error
		if result == "" {
			result = Bytes(uint64(r.Result.Bytes))
		}
	}
	for _, p := range []string{"  ", string(r.Engine), " ", r.Op, "(fd=", strconv.FormatInt(r.Fd, 10), ", ", Bytes(r.RequestedBytes),
		" at offset ", strconv.FormatInt(r.Offset, 10), ") ", target, " user_data 0x", strconv.FormatUint(r.UserData, 16), " -> ", result} {
		b.WriteString(p)
	}
	if r.CompleteNs != 0 {
		b.WriteString(", completed after " + Duration(sub(r.CompleteNs, r.SubmitNs)))
	}
	if r.ReapNs != 0 {
		b.WriteString(", reaped after " + Duration(sub(r.ReapNs, r.SubmitNs)))
	}
	if r.InflightAtIssue > 0 {
		b.WriteString(", " + Count(uint64(r.InflightAtIssue), "request") + " in flight at the device at its issue")
	}
	if r.Worker != record.WorkerInline {
		b.WriteString(", run by " + string(r.Worker) + " thread " + unum(uint64(r.WorkerTid)))
	}
	b.WriteString("\n")
	switch {
	case r.Direct:
		b.WriteString("    O_DIRECT: the page cache was bypassed\n")
	case c.PagesRequested > 0 || c.PagesAdded > 0:
		b.WriteString("    page cache: " + unum(c.PagesHit) + " hit, " + unum(c.PagesMissed) + " missed")
		if c.PagesAdded > 0 {
			b.WriteString("; " + Count(c.PagesAdded, "page") + " added (index " + Ranges(c.AddedRanges) + ")")
		}
		b.WriteString("\n")
	}
	for _, ra := range c.Readahead {
		b.WriteString("    readahead: " + string(ra.Kind) + ", window " + Count(uint64(ra.Pages), "page") + " from index " + unum(ra.StartIndex) + "\n")
	}
	if r.DirtiedPages > 0 {
		b.WriteString("    dirtied " + Count(uint64(r.DirtiedPages), "page") + " in memory; written back later\n")
	}
	for _, bio := range r.Bios {
		b.WriteString("    " + bioLine(bio) + "\n")
	}
	return b.String()
}

// SubmissionLine heads the stories of the requests one submission call
// (op_id r.SubmitOpID) submitted when the call's own record is not right
// before them (AsyncCallLine): an SQPOLL submission, a call whose record
// was lost, or the stories of one call with other records in between.
func SubmissionLine(r *record.Request) string {
	call := "io_submit"
	if r.Engine == record.EngineIOUring {
		call = "io_uring_enter"
	}
	if r.SubmitOpID == 0 {
		call = "SQPOLL submission"
	}
	unum := func(v uint64) string { return strconv.FormatUint(v, 10) }
	return call + " (op " + unum(r.SubmitOpID) + ") [" + Safe(r.Comm) + " pid " + unum(uint64(r.Pid)) + " tid " + unum(uint64(r.Tid)) + "]:\n"
}

// AsyncCallLine is the story line of a libaio or io_uring system call
// (record.AsyncCall): what it was asked, what it did and its time, waiting
// included. A submission call's line ends in ":" and heads the stories of
// its requests.
func AsyncCallLine(c *record.AsyncCall) string {
	unum := func(v uint64) string { return strconv.FormatUint(v, 10) }
	var b strings.Builder
	b.Grow(160)
	for _, p := range []string{c.Syscall, " (op ", unum(c.OpID), ") [", Safe(c.Comm), " pid ", unum(uint64(c.Pid)), " tid ", unum(uint64(c.Tid)), "]: "} {
		b.WriteString(p)
	}
	switch c.Syscall {
	case "io_submit":
		b.WriteString(Count(uint64(c.ToSubmit), "iocb") + " passed")
	case "io_uring_enter":
		b.WriteString("to_submit " + unum(uint64(c.ToSubmit)) + ", min_complete " + unum(uint64(c.MinComplete)))
		if len(c.Flags) > 0 {
			b.WriteString(", flags " + strings.Join(c.Flags, "|"))
		}
	default:
		b.WriteString("min_nr " + unum(uint64(c.MinComplete)))
	}
	heads := false
	switch {
	case c.Error != "":
		b.WriteString(" -> " + c.Error)
	case c.Syscall == "io_submit" || c.Syscall == "io_uring_enter":
		b.WriteString(" -> " + unum(uint64(c.Submitted)) + " submitted")
		heads = c.Submitted > 0
	}
	if c.Syscall != "io_submit" && !slices.Contains(c.Unavailable, "completed") {
		if c.Syscall == "io_uring_enter" {
			b.WriteString(", " + unum(uint64(c.Completed)) + " completed in the call")
		} else {
			b.WriteString(", " + Count(uint64(c.Completed), "event") + " reaped")
		}
	}
	if !slices.Contains(c.Unavailable, "duration_ns") {
		b.WriteString(", " + Duration(c.DurationNs) + " in the call")
	}
	if heads {
		b.WriteString(":")
	}
	b.WriteString("\n")
	return b.String()
}
