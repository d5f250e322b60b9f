package render

import (
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
	c := r.Cache
	if len(r.Bios) == 0 && c.PagesMissed == 0 && c.PagesAdded == 0 && r.DirtiedPages == 0 && r.Result.Error == "" {
		return ""
	}
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
// (op_id r.SubmitOpID) submitted.
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
