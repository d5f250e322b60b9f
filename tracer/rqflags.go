package tracer

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"
)

// rqfFlushSeqDefine is RQF_FLUSH_SEQ where it is a #define (include/linux/blkdev.h,
// up to 6.1 at least): 1 << 4, and no enumerator in BTF.
const rqfFlushSeqDefine = 1 << 4

var (
	flushSeqOnce sync.Once
	flushSeqBit  uint32
	flushSeqErr  error
)

// kernelRqfFlushSeq returns the running kernel's RQF_FLUSH_SEQ request flag
// (struct request.rq_flags), read from /sys/kernel/btf/vmlinux once per process.
func kernelRqfFlushSeq() (uint32, error) {
	flushSeqOnce.Do(func() {
		raw, err := os.ReadFile("/sys/kernel/btf/vmlinux")
		if err != nil {
			flushSeqErr = fmt.Errorf("reading the kernel's BTF for RQF_FLUSH_SEQ: %w", err)
			return
		}
		flushSeqBit, flushSeqErr = rqfFlushSeq(raw)
	})
	return flushSeqBit, flushSeqErr
}

// rqfFlushSeq returns RQF_FLUSH_SEQ from raw BTF: 1 << __RQF_FLUSH_SEQ when an
// enum has that enumerator (6.12's is anonymous, `enum rqf_flags` later), else
// the old #define. A CO-RE enum relocation matches enums by name, so it cannot
// see 6.12's; inflating every type with cilium/ebpf (Spec.All) costs ~100 ms
// and ~40 MB, this scan of the type section a few ms.
func rqfFlushSeq(raw []byte) (uint32, error) {
	v, ok, err := btfEnumerator(raw, "__RQF_FLUSH_SEQ")
	if err != nil {
		return 0, err
	}
	if !ok {
		return rqfFlushSeqDefine, nil
	}
	if v < 0 || v > 31 {
		return 0, fmt.Errorf("kernel BTF: __RQF_FLUSH_SEQ = %d does not fit the 32-bit rq_flags", v)
	}
	return 1 << v, nil
}

// BTF kinds whose records are followed by more than the 12-byte struct
// btf_type (include/uapi/linux/btf.h).
const (
	btfKindInt       = 1
	btfKindArray     = 3
	btfKindStruct    = 4
	btfKindUnion     = 5
	btfKindEnum      = 6
	btfKindFuncProto = 13
	btfKindVar       = 14
	btfKindDatasec   = 15
	btfKindDeclTag   = 17
	btfKindEnum64    = 19
	btfKindMax       = 20
)

var errBTFShort = errors.New("kernel BTF: truncated")

// btfEnumerator finds the value of an enumerator (of a named or anonymous
// enum) in raw BTF (struct btf_header, then the type and string sections).
func btfEnumerator(raw []byte, name string) (int64, bool, error) {
	if len(raw) < 24 {
		return 0, false, errBTFShort
	}
	var bo binary.ByteOrder = binary.LittleEndian
	switch {
	case raw[0] == 0x9f && raw[1] == 0xeb:
	case raw[0] == 0xeb && raw[1] == 0x9f:
		bo = binary.BigEndian
	default:
		return 0, false, errors.New("kernel BTF: bad magic")
	}
	hdrLen := uint64(bo.Uint32(raw[4:]))
	typeOff, typeLen := hdrLen+uint64(bo.Uint32(raw[8:])), uint64(bo.Uint32(raw[12:]))
	strOff, strLen := hdrLen+uint64(bo.Uint32(raw[16:])), uint64(bo.Uint32(raw[20:]))
	if typeOff+typeLen > uint64(len(raw)) || strOff+strLen > uint64(len(raw)) {
		return 0, false, errBTFShort
	}
	types, strs := raw[typeOff:typeOff+typeLen], raw[strOff:strOff+strLen]
	isName := func(off uint32) bool {
		if uint64(off)+uint64(len(name)) >= uint64(len(strs)) {
			return false
		}
		s := strs[off:]
		return bytes.HasPrefix(s, []byte(name)) && s[len(name)] == 0
	}
	for p := uint64(0); p < uint64(len(types)); {
		if p+12 > uint64(len(types)) {
			return 0, false, errBTFShort
		}
		info := bo.Uint32(types[p+4:])
		kind, vlen := (info>>24)&0x1f, uint64(info&0xffff)
		p += 12
		var extra uint64
		switch kind {
		case btfKindInt, btfKindVar, btfKindDeclTag:
			extra = 4
		case btfKindArray:
			extra = 12
		case btfKindStruct, btfKindUnion, btfKindDatasec, btfKindEnum64:
			extra = 12 * vlen
		case btfKindEnum, btfKindFuncProto:
			extra = 8 * vlen
		default:
			if kind >= btfKindMax {
				return 0, false, fmt.Errorf("kernel BTF: unknown type kind %d", kind)
			}
		}
		if p+extra > uint64(len(types)) {
			return 0, false, errBTFShort
		}
		switch kind {
		case btfKindEnum:
			for i := uint64(0); i < vlen; i++ {
				e := types[p+8*i:]
				if isName(bo.Uint32(e)) {
					return int64(int32(bo.Uint32(e[4:]))), true, nil
				}
			}
		case btfKindEnum64:
			for i := uint64(0); i < vlen; i++ {
				e := types[p+12*i:]
				if isName(bo.Uint32(e)) {
					return int64(uint64(bo.Uint32(e[8:]))<<32 | uint64(bo.Uint32(e[4:]))), true, nil
				}
			}
		}
		p += extra
	}
	return 0, false, nil
}
