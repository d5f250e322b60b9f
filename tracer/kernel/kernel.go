// Package kernel decodes the running kernel's numbers in events: request
// flags, writeback reasons and block status from BTF enums, device numbers
// and filesystem magics. Engine and tracer share it; it loads nothing.
package kernel

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/cilium/ebpf/btf"
)

// Kernel decodes kernel-specific numbers in events: request flags (rwbs),
// writeback reasons and device numbers. Values come from the running
// kernel's BTF, never from a table keyed by version: enum req_op,
// enum req_flag_bits (include/linux/blk_types.h) and enum wb_reason
// (include/linux/backing-dev-defs.h) have all been renumbered over time.
type Kernel struct {
	reqOps    map[uint32]string // REQ_OP_* value -> name without prefix
	opMask    uint32            // REQ_OP_MASK
	flagBits  map[string]uint32 // "SYNC" -> bit number of __REQ_SYNC
	wbReasons map[uint32]string // WB_REASON_* value -> lower-case name
}

// FromBTF reads the enums from a BTF spec (btf.LoadKernelSpec() for the
// running kernel). It fails if a required enum is missing.
func FromBTF(spec *btf.Spec) (*Kernel, error) {
	k := &Kernel{reqOps: map[uint32]string{}, flagBits: map[string]uint32{}, wbReasons: map[uint32]string{}, opMask: 0xff}
	var ops *btf.Enum
	if err := spec.TypeByName("req_op", &ops); err != nil {
		if err := spec.TypeByName("req_opf", &ops); err != nil {
			return nil, fmt.Errorf("kernel BTF has no enum req_op/req_opf: %w", err)
		}
	}
	for _, v := range ops.Values {
		if name, ok := strings.CutPrefix(v.Name, "REQ_OP_"); ok && name != "LAST" {
			k.reqOps[uint32(v.Value)] = name
		}
	}
	var bits *btf.Enum
	if err := spec.TypeByName("req_flag_bits", &bits); err != nil {
		return nil, fmt.Errorf("kernel BTF has no enum req_flag_bits: %w", err)
	}
	for _, v := range bits.Values {
		if name, ok := strings.CutPrefix(v.Name, "__REQ_"); ok {
			k.flagBits[name] = uint32(v.Value)
		}
	}
	if b, ok := k.flagBits["FAILFAST_DEV"]; ok && b > 0 {
		k.opMask = 1<<b - 1 // REQ_OP_BITS: flags start right after the op
	}
	var reasons *btf.Enum
	if err := spec.TypeByName("wb_reason", &reasons); err != nil {
		return nil, fmt.Errorf("kernel BTF has no enum wb_reason: %w", err)
	}
	for _, v := range reasons.Values {
		if name, ok := strings.CutPrefix(v.Name, "WB_REASON_"); ok && name != "MAX" {
			k.wbReasons[uint32(v.Value)] = strings.ToLower(name)
		}
	}
	return k, nil
}

// Linux618 returns the values of Linux 6.18 (x86-64), for tests and for
// decoding recorded streams without a kernel.
func Linux618() *Kernel {
	return &Kernel{
		reqOps: map[uint32]string{0: "READ", 1: "WRITE", 2: "FLUSH", 3: "DISCARD", 5: "SECURE_ERASE",
			7: "ZONE_APPEND", 9: "WRITE_ZEROES", 10: "ZONE_OPEN", 11: "ZONE_CLOSE", 13: "ZONE_FINISH",
			15: "ZONE_RESET", 17: "ZONE_RESET_ALL", 34: "DRV_IN", 35: "DRV_OUT"},
		opMask: 0xff,
		flagBits: map[string]uint32{"FAILFAST_DEV": 8, "SYNC": 11, "META": 12, "PRIO": 13, "FUA": 17,
			"PREFLUSH": 18, "RAHEAD": 19, "BACKGROUND": 20},
		wbReasons: map[uint32]string{0: "background", 1: "vmscan", 2: "sync", 3: "periodic",
			4: "laptop_timer", 5: "fs_free_space", 6: "forker_thread", 7: "foreign_flush"},
	}
}

func (k *Kernel) flag(f uint32, name string) bool {
	b, ok := k.flagBits[name]
	return ok && f&(1<<b) != 0
}

// Rwbs renders request flags the way blktrace and the block tracepoints do
// (blk_fill_rwbs in kernel/trace/blktrace.c): optional F (preflush), the op
// (R W D DE F N), then F (FUA), A (readahead), S (sync), M (metadata).
func (k *Kernel) Rwbs(cmdFlags uint32) string {
	var b strings.Builder
	if k.flag(cmdFlags, "PREFLUSH") {
		b.WriteByte('F')
	}
	switch k.reqOps[cmdFlags&k.opMask] {
	case "WRITE", "ZONE_APPEND":
		b.WriteByte('W')
	case "DISCARD":
		b.WriteByte('D')
	case "SECURE_ERASE":
		b.WriteString("DE")
	case "FLUSH":
		b.WriteByte('F')
	case "READ":
		b.WriteByte('R')
	default:
		b.WriteByte('N')
	}
	if k.flag(cmdFlags, "FUA") {
		b.WriteByte('F')
	}
	if k.flag(cmdFlags, "RAHEAD") {
		b.WriteByte('A')
	}
	if k.flag(cmdFlags, "SYNC") {
		b.WriteByte('S')
	}
	if k.flag(cmdFlags, "META") {
		b.WriteByte('M')
	}
	return b.String()
}

// IsRead reports whether the request op is REQ_OP_READ.
func (k *Kernel) IsRead(cmdFlags uint32) bool { return k.reqOps[cmdFlags&k.opMask] == "READ" }

// IsWrite reports whether the request op is REQ_OP_WRITE (or zone append).
func (k *Kernel) IsWrite(cmdFlags uint32) bool {
	op := k.reqOps[cmdFlags&k.opMask]
	return op == "WRITE" || op == "ZONE_APPEND"
}

// WBReason names a writeback reason (enum wb_reason), e.g. "periodic".
func (k *Kernel) WBReason(r uint32) string {
	if n, ok := k.wbReasons[r]; ok {
		return n
	}
	return fmt.Sprintf("reason_%d", r)
}

// Dev renders a kernel dev_t (major<<20 | minor, include/linux/kdev_t.h) as "major:minor".
// The engine caches these per device (Engine.devName); strconv keeps a miss
// to the one allocation of the result.
func Dev(kdev uint32) string {
	var buf [24]byte // two uint32s in decimal and the colon
	b := strconv.AppendUint(buf[:0], uint64(kdev>>20), 10)
	b = append(b, ':')
	b = strconv.AppendUint(b, uint64(kdev&(1<<20-1)), 10)
	return string(b)
}

// UserDev converts a userspace dev_t (stat's st_dev, glibc encoding) to the
// kernel's major<<20|minor encoding.
func UserDev(dev uint64) uint32 {
	major := uint32((dev>>8)&0xfff) | uint32((dev>>32)&^0xfff)
	minor := uint32(dev&0xff) | uint32((dev>>12)&^0xff)
	return major<<20 | minor
}

// BlkStatus names a blk_status_t (BLK_STS_* in include/linux/blk_types.h;
// #defines, so not in BTF). Unknown values print as numbers.
func BlkStatus(s uint32) string {
	if s == 0 {
		return ""
	}
	names := []string{1: "NOTSUPP", 2: "TIMEOUT", 3: "NOSPC", 4: "TRANSPORT", 5: "TARGET",
		6: "RESV_CONFLICT", 7: "MEDIUM", 8: "PROTECTION", 9: "RESOURCE", 10: "IOERR",
		11: "DM_REQUEUE", 12: "AGAIN", 13: "DEV_RESOURCE", 14: "ZONE_OPEN_RESOURCE",
		15: "ZONE_ACTIVE_RESOURCE", 16: "OFFLINE", 17: "DURATION_LIMIT", 18: "INVAL"}
	if int(s) < len(names) && names[s] != "" {
		return "BLK_STS_" + names[s]
	}
	return fmt.Sprintf("blk_status_%d", s)
}
