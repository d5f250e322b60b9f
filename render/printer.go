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
	w     io.Writer // where a record is rendered (cur)
	cur   bytes.Buffer
	batch []byte
	json  bool
	quiet bool
	enc   *json.Encoder
	// Collect keeps every record in Collected (demos read the records
	// they printed).
	Collected []any
	Collect   bool
	// lastSubmit, lastPid: the submission call whose requests the last
	// stories told (request.go), so that its heading is printed once.
	lastSubmit uint64
	lastPid    uint32
	// OnBroken, if set, is called once, at the first failed write.
	OnBroken func(error)
}

// pipeBuf is PIPE_BUF on Linux: the largest write a pipe keeps whole.
const pipeBuf = 4096

// NewPrinter returns a printer writing to w: JSON Lines if asJSON, else
// stories; quiet prints only the summary.
func NewPrinter(w io.Writer, asJSON, quiet bool) *Printer {
	p := &Printer{out: w, json: asJSON, quiet: quiet}
	p.w = &p.cur
	p.enc = json.NewEncoder(&p.cur)
	p.enc.SetEscapeHTML(false)
	return p
}

// add moves the record rendered in cur into the batch, writing the batch
// out first if the record would take it past pipeBuf.
func (p *Printer) add() {
	if len(p.batch) > 0 && len(p.batch)+p.cur.Len() > pipeBuf {
		p.Flush()
	}
	p.batch = append(p.batch, p.cur.Bytes()...)
	p.cur.Reset()
	if len(p.batch) >= pipeBuf {
		p.Flush()
	}
}

// Flush writes out the batch. The first failed write calls OnBroken (if
// set: -p and --comm traces then end, since nobody reads them); records are
// dropped after that.
func (p *Printer) Flush() {
	if len(p.batch) > 0 {
		if _, err := p.out.Write(p.batch); err != nil && p.OnBroken != nil {
			p.OnBroken(err)
			p.OnBroken = nil
		}
		p.batch = p.batch[:0]
	}
}

// Record prints one record (*record.Syscall, *record.Writeback or
// *record.Persisted): a JSON line, or its story.
func (p *Printer) Record(rec any) {
	if p.Collect {
		p.Collected = append(p.Collected, rec)
	}
	if p.quiet {
		return
	}
	defer p.add()
	if p.json {
		p.enc.Encode(rec)
		return
	}
	switch r := rec.(type) {
	case *record.Syscall:
		p.cur.WriteString(SyscallStory(r))
	case *record.Writeback:
		p.cur.WriteString(WritebackStory(r))
	case *record.Persisted:
		p.cur.WriteString(PersistedStory(r))
	case *record.Fault:
		p.cur.WriteString(FaultStory(r))
	case *record.Request:
		if story := RequestStory(r); story != "" {
			if r.SubmitOpID != p.lastSubmit || r.Pid != p.lastPid {
				p.cur.WriteString(SubmissionLine(r))
				p.lastSubmit, p.lastPid = r.SubmitOpID, r.Pid
			}
			p.cur.WriteString(story)
		}
		return
	}
	p.lastSubmit, p.lastPid = 0, 0
}

// WriteJSON adds v to the batch as one JSON line, whatever the printer's
// mode (a record type the printer does not know, such as the workload
// record).
func (p *Printer) WriteJSON(v any) {
	p.enc.Encode(v)
	p.add()
}

// Summary prints the end-of-trace summary and writes out the batch.
func (p *Printer) Summary(s *record.Summary) {
	defer func() {
		p.add()
		p.Flush()
	}()
	if p.json {
		p.enc.Encode(s)
		return
	}
	p.cur.WriteString(SummaryText(s))
}
