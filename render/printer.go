// Package render prints records (package record): text stories, the summary
// table, JSON Lines, and the writer that batches them into PIPE_BUF-sized
// writes. It formats only: every number comes from the record.
package render

import (
	"bytes"
	"encoding/json"
	"io"

	"github.com/iopath/iopath/record"
)

// Printer writes records as JSON Lines or as text stories. Records are
// gathered and written several per write(2) (one write per record cost
// 2-4 µs, more than decoding and encoding it), but only whole records and at
// most pipeBuf bytes per write: the traced command often shares the output,
// and the kernel keeps a write of up to PIPE_BUF bytes to a pipe (any write
// to a file) in one piece, so its lines never land inside one of ours. The
// buffer is written out when the tracer finds the ring buffer empty
// (Tracer.Idle), after the summary, and by Flush.
type Printer struct {
	out   io.Writer // the destination
	cur   bytes.Buffer
	batch []byte
	chunk int // largest write of several records (pipeBuf unless SetChunk)
	json  bool
	quiet bool
	files int // file rows of the text summary (SetFileRows)
	enc   *json.Encoder
	// Collect keeps every record in Collected (demos read the records
	// they printed).
	Collected []any
	Collect   bool
	// lastSubmit, lastPid: the submission call whose requests the last
	// stories told (request.go), so that its heading is printed once.
	lastSubmit uint64
	lastPid    uint32
}

// pipeBuf is PIPE_BUF on Linux: the largest write a pipe keeps whole.
const pipeBuf = 4096

// NewPrinter returns a printer writing to w: JSON Lines if asJSON, else
// stories; quiet prints only the summary.
func NewPrinter(w io.Writer, asJSON, quiet bool) *Printer {
	p := &Printer{out: w, json: asJSON, quiet: quiet, chunk: pipeBuf, files: DefaultFileRows}
	p.enc = json.NewEncoder(&p.cur)
	p.enc.SetEscapeHTML(false)
	return p
}

// SetChunk raises the largest write of several records from PIPE_BUF to n
// bytes, for an output nobody else writes to (a regular file of iopath's
// own: -o FILE, or stdout redirected without a traced command). Fewer,
// larger writes: 64 KiB instead of 4 KiB cut iopath's write(2) calls 16×.
func (p *Printer) SetChunk(n int) {
	if n > pipeBuf {
		p.chunk = n
	}
}

// SetFileRows sets how many files the text summary's file tables list (0:
// all; DefaultFileRows unless set). The JSON summary lists every file.
func (p *Printer) SetFileRows(n int) { p.files = n }

// added takes the record appended to the batch from byte from on: the batch
// before it is written out first if the record takes the batch past the
// chunk size, and the batch is written out once it reaches that size.
func (p *Printer) added(from int) {
	if from > 0 && len(p.batch) > p.chunk {
		p.write(p.batch[:from])
		p.batch = p.batch[:copy(p.batch, p.batch[from:])]
	}
	if len(p.batch) >= p.chunk {
		p.Flush()
	}
}

// add moves the record rendered in cur into the batch.
func (p *Printer) add() {
	from := len(p.batch)
	p.batch = append(p.batch, p.cur.Bytes()...)
	p.cur.Reset()
	p.added(from)
}

// Flush writes out the batch. A failed write is the destination's to keep
// and report (session.Out: the first one stops the run); the batch is
// dropped either way.
func (p *Printer) Flush() {
	if len(p.batch) > 0 {
		p.write(p.batch)
		p.batch = p.batch[:0]
	}
}

func (p *Printer) write(b []byte) {
	p.out.Write(b) // errors: see Flush
}

// Record prints one record (*record.Syscall, *record.Writeback,
// *record.Persisted, *record.Fault, *record.Request or *record.AsyncCall):
// a JSON line, or its story.
func (p *Printer) Record(rec any) {
	if p.Collect {
		p.Collected = append(p.Collected, rec)
	}
	if p.quiet {
		return
	}
	from := len(p.batch)
	if p.json {
		if r, ok := rec.(*record.Syscall); ok { // the one streamed per call
			p.batch = append(AppendSyscallJSON(p.batch, r), '\n')
			p.added(from)
			return
		}
		p.enc.Encode(rec)
		p.add()
		return
	}
	switch r := rec.(type) {
	case *record.Syscall:
		p.batch = AppendSyscallStory(p.batch, r)
	case *record.Writeback:
		p.batch = append(p.batch, WritebackStory(r)...)
	case *record.Persisted:
		p.batch = append(p.batch, PersistedStory(r)...)
	case *record.Fault:
		p.batch = append(p.batch, FaultStory(r)...)
	case *record.AsyncCall:
		p.batch = append(p.batch, AsyncCallLine(r)...)
		p.lastSubmit, p.lastPid = r.OpID, r.Pid // its requests' stories follow
		p.added(from)
		return
	case *record.Request:
		if story := RequestStory(r); story != "" {
			if r.SubmitOpID != p.lastSubmit || r.Pid != p.lastPid {
				p.batch = append(p.batch, SubmissionLine(r)...)
				p.lastSubmit, p.lastPid = r.SubmitOpID, r.Pid
			}
			p.batch = append(p.batch, story...)
		}
		p.added(from)
		return
	}
	p.lastSubmit, p.lastPid = 0, 0
	p.added(from)
}

// WriteJSON adds v to the batch as one JSON line, whatever the printer's
// mode (a record type the printer does not know, such as the workload
// record).
func (p *Printer) WriteJSON(v any) {
	p.enc.Encode(v)
	p.add()
}

// WriteText adds s (whole lines) to the batch, whatever the printer's mode
// (the interval summaries of `trace --interval`).
func (p *Printer) WriteText(s string) {
	p.cur.WriteString(s)
	p.add()
}

// Summary prints the end-of-trace summary and writes out the batch.
func (p *Printer) Summary(s *record.Summary) {
	if p.json {
		p.enc.Encode(s)
	} else {
		p.cur.WriteString(SummaryText(s, p.files))
	}
	p.add()
	p.Flush()
}
