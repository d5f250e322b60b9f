package tracer

import (
	"strings"

	"github.com/iopath/iopath/bpf"
)

// sync_file_range(2) is not an fsync: it starts writeback of a range
// (SYNC_FILE_RANGE_WRITE) and may wait for writeback already running
// before (WAIT_BEFORE) or for the one it started (WAIT_AFTER); it writes
// no metadata and never flushes the device cache (include/uapi/linux/fs.h,
// fs/sync.c).
const (
	syncRangeWaitBefore = 1
	syncRangeWrite      = 2
	syncRangeWaitAfter  = 4
)

// syncRangeFlags names sync_file_range's flags ("" for other calls or no
// flag: the kernel then does nothing).
func syncRangeFlags(o *bpf.IopathOp) string {
	if o.Sys != uint32(bpf.IopathOpSysSYS_SYNC_FILE_RANGE) {
		return ""
	}
	var names []string
	for _, f := range []struct {
		bit  uint32
		name string
	}{{syncRangeWaitBefore, "WAIT_BEFORE"}, {syncRangeWrite, "WRITE"}, {syncRangeWaitAfter, "WAIT_AFTER"}} {
		if o.SysFlags&f.bit != 0 {
			names = append(names, f.name)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, "|")
}

// syncReason is the writeback reason of a bio submitted by a traced call
// of the fsync family (sys: its enum op_sys).
func syncReason(sys uint32) string {
	if s := sysName(sys); s != "" && isSyncSys(sys) {
		return s
	}
	return "fsync"
}
