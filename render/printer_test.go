package render_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/iopath/iopath/record"
	"github.com/iopath/iopath/render"
)

// writes records every write(2) the printer makes.
type writes struct {
	calls [][]byte
}

func (w *writes) Write(b []byte) (int, error) {
	w.calls = append(w.calls, bytes.Clone(b))
	return len(b), nil
}

// Records are batched, but a write carries only whole records and at most
// PIPE_BUF (4096) bytes unless one record alone is longer: the traced
// command's own lines, sharing the output, never land inside a record.
func TestPrinterWritesWholeRecordsUpToPipeBuf(t *testing.T) {
	var w writes
	p := render.NewPrinter(&w, true, false)
	big := &record.Syscall{Type: record.TypeSyscall, Syscall: "read", Bios: make([]record.Bio, 40)}
	for i := range 100 {
		if i == 50 {
			p.Record(big) // over 4 KiB on its own
			continue
		}
		p.Record(&record.Syscall{Type: record.TypeSyscall, OpID: uint64(i), Syscall: "read"})
	}
	p.Flush()
	var all []byte
	for i, c := range w.calls {
		all = append(all, c...)
		if len(c) > 4096 && bytes.Count(c, []byte("\n")) != 1 {
			t.Errorf("write %d: %d bytes holding %d records; past 4096 bytes a write must be one record", i, len(c), bytes.Count(c, []byte("\n")))
		}
		if len(c) == 0 || c[len(c)-1] != '\n' {
			t.Errorf("write %d ends inside a record: %q", i, c[max(0, len(c)-20):])
		}
	}
	if n := strings.Count(string(all), "\n"); n != 100 || len(w.calls) < 3 || len(w.calls) > 30 {
		t.Errorf("%d records in %d writes, want 100 in batches", n, len(w.calls))
	}
}
