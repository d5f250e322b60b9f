package render

import (
	"strconv"
	"unicode/utf8"

	"github.com/iopath/iopath/record"
)

// AppendSyscallJSON appends r as encoding/json encodes it (SetEscapeHTML
// false, the Printer's setting), without the newline: the same bytes,
// field for field (TestSyscallJSONMatchesEncodingJSON fills every field,
// so a field added to record.Syscall without its line here fails it).
// --json streams one such record per traced call: the reflection-driven
// encoder cost ~2 µs and 3 allocations per cold-read record here.
func AppendSyscallJSON(b []byte, r *record.Syscall) []byte {
	b = append(b, `{"type":`...)
	b = appendJSONString(b, string(r.Type))
	b = appendUintField(b, `,"op_id":`, r.OpID)
	b = appendUintField(b, `,"time_ns":`, r.TimeNs)
	b = appendUintField(b, `,"pid":`, uint64(r.Pid))
	b = appendUintField(b, `,"tid":`, uint64(r.Tid))
	b = appendStringField(b, `,"comm":`, r.Comm)
	b = appendStringField(b, `,"syscall":`, r.Syscall)
	b = append(b, `,"fd":`...)
	b = strconv.AppendInt(b, r.Fd, 10)
	if r.Path != "" {
		b = appendStringField(b, `,"path":`, r.Path)
	}
	b = appendStringField(b, `,"dev":`, r.Dev)
	b = appendUintField(b, `,"ino":`, r.Ino)
	b = appendStringField(b, `,"fs":`, r.FS)
	b = appendUintField(b, `,"offset":`, r.Offset)
	b = appendUintField(b, `,"requested_bytes":`, r.RequestedBytes)
	b = append(b, `,"returned_bytes":`...)
	b = strconv.AppendInt(b, r.ReturnedBytes, 10)
	if r.Error != "" {
		b = appendStringField(b, `,"error":`, r.Error)
	}
	b = appendUintField(b, `,"duration_ns":`, r.DurationNs)
	b = appendUintField(b, `,"blocked_ns":`, r.BlockedNs)
	b = append(b, `,"cache":`...)
	b = appendCacheJSON(b, &r.Cache)
	b = append(b, `,"bios":`...)
	if r.Bios == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range r.Bios {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendBioJSON(b, &r.Bios[i])
		}
		b = append(b, ']')
	}
	b = appendUintField(b, `,"dirtied_pages":`, uint64(r.DirtiedPages))
	if len(r.DirtiedRanges) > 0 {
		b = append(b, `,"dirtied_ranges":`...)
		b = appendRangesJSON(b, r.DirtiedRanges)
	}
	b = appendUintField(b, `,"other_dirtied_pages":`, uint64(r.OtherDirtiedPages))
	b = appendUintField(b, `,"throttle_ns":`, r.ThrottleNs)
	b = appendUintField(b, `,"throttle_pauses":`, uint64(r.ThrottlePauses))
	b = appendUintField(b, `,"throttle_max_pause_ns":`, r.ThrottleMaxPauseNs)
	b = appendUintField(b, `,"read_before_write_pages":`, uint64(r.ReadBeforeWritePages))
	if len(r.Unavailable) > 0 {
		b = append(b, `,"unavailable":[`...)
		for i, s := range r.Unavailable {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, s)
		}
		b = append(b, ']')
	}
	if r.Truncated != nil {
		b = append(b, `,"truncated":{`...)
		if r.Truncated.RangePages != 0 {
			b = appendUintField(b, `"range_pages":`, uint64(r.Truncated.RangePages))
		}
		b = append(b, '}')
	}
	b = append(b, `,"direct":`...)
	b = strconv.AppendBool(b, r.Direct)
	if r.Dsync {
		b = append(b, `,"dsync":true`...)
	}
	if r.MemoryOnly {
		b = append(b, `,"memory_only":true`...)
	}
	if r.Advice != "" {
		b = appendStringField(b, `,"advice":`, r.Advice)
	}
	if r.DeviceFlush != "" {
		b = appendStringField(b, `,"device_flush":`, string(r.DeviceFlush))
	}
	if w := r.SyncWriteback; w != nil {
		b = appendUintField(b, `,"sync_writeback":{"bios":`, w.Bios)
		b = appendUintField(b, `,"bytes":`, w.Bytes)
		if w.AtLeast {
			b = append(b, `,"at_least":true`...)
		}
		b = append(b, '}')
	}
	if r.OutDev != "" {
		b = appendStringField(b, `,"out_dev":`, r.OutDev)
	}
	if r.OutIno != 0 {
		b = appendUintField(b, `,"out_ino":`, r.OutIno)
	}
	if r.OutPath != "" {
		b = appendStringField(b, `,"out_path":`, r.OutPath)
	}
	if r.SyncFlags != "" {
		b = appendStringField(b, `,"sync_flags":`, r.SyncFlags)
	}
	return append(b, '}')
}

func appendCacheJSON(b []byte, c *record.Cache) []byte {
	b = appendUintField(b, `{"pages_requested":`, c.PagesRequested)
	b = appendUintField(b, `,"pages_hit":`, c.PagesHit)
	b = appendUintField(b, `,"pages_missed":`, c.PagesMissed)
	b = appendUintField(b, `,"pages_added":`, c.PagesAdded)
	if len(c.AddedRanges) > 0 {
		b = append(b, `,"added_ranges":`...)
		b = appendRangesJSON(b, c.AddedRanges)
	}
	b = append(b, `,"readahead":`...)
	if c.Readahead == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range c.Readahead {
			ra := &c.Readahead[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = appendStringField(b, `{"kind":`, string(ra.Kind))
			b = appendUintField(b, `,"start_index":`, ra.StartIndex)
			b = appendUintField(b, `,"pages":`, uint64(ra.Pages))
			b = appendUintField(b, `,"async_pages":`, uint64(ra.AsyncPages))
			b = appendStringField(b, `,"source":`, string(ra.Source))
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if c.Lookups != 0 {
		b = appendUintField(b, `,"lookups":`, uint64(c.Lookups))
	}
	return append(b, '}')
}

// AppendBioJSON appends one bio as encoding/json encodes it.
func AppendBioJSON(b []byte, bio *record.Bio) []byte {
	b = appendStringField(b, `{"dev":`, bio.Dev)
	b = appendUintField(b, `,"sector":`, bio.Sector)
	b = appendUintField(b, `,"bytes":`, uint64(bio.Bytes))
	b = appendStringField(b, `,"rwbs":`, bio.Rwbs)
	b = appendUintField(b, `,"queue_ns":`, bio.QueueNs)
	b = appendUintField(b, `,"issue_ns":`, bio.IssueNs)
	b = appendUintField(b, `,"complete_ns":`, bio.CompleteNs)
	if bio.CompletedBeforeNs != 0 {
		b = appendUintField(b, `,"completed_before_ns":`, bio.CompletedBeforeNs)
	}
	if bio.Error != "" {
		b = appendStringField(b, `,"error":`, bio.Error)
	}
	b = appendUintField(b, `,"d2c_ns":`, bio.D2CNs)
	b = appendUintField(b, `,"q2c_ns":`, bio.Q2CNs)
	if bio.Requeues != 0 {
		b = appendUintField(b, `,"requeues":`, uint64(bio.Requeues))
	}
	b = appendUintField(b, `,"request_bytes":`, uint64(bio.RequestBytes))
	b = appendUintField(b, `,"request_bios":`, uint64(bio.RequestBios))
	if bio.Kind != "" {
		b = appendStringField(b, `,"kind":`, string(bio.Kind))
	}
	return append(b, '}')
}

func appendRangesJSON(b []byte, rs []record.PageRange) []byte {
	b = append(b, '[')
	for i, r := range rs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendUintField(b, `{"index":`, r.Index)
		b = appendUintField(b, `,"pages":`, uint64(r.Pages))
		b = append(b, '}')
	}
	return append(b, ']')
}

func appendUintField(b []byte, key string, v uint64) []byte {
	return strconv.AppendUint(append(b, key...), v, 10)
}

func appendStringField(b []byte, key, s string) []byte {
	return appendJSONString(append(b, key...), s)
}

// appendJSONString quotes s as encoding/json does without HTML escaping:
// \" \\ \b \f \n \r \t, \u00XX for other control bytes, \ufffd for each
// invalid UTF-8 byte, \u2028 and \u2029 (JavaScript line separators).
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
