package timeline

import (
	"bufio"
	"encoding/json"
	"io"
)

// jsonArray writes the elements of a JSON array as they come, one a line,
// through a buffer; the first write error sticks (Close reports it).
type jsonArray struct {
	w     *bufio.Writer
	enc   *json.Encoder
	first bool
	err   error
}

// newJSONArray writes head (which must open the array) to w.
func newJSONArray(w io.Writer, head string) *jsonArray {
	bw := bufio.NewWriterSize(w, 64<<10)
	a := &jsonArray{w: bw, enc: json.NewEncoder(bw), first: true}
	_, a.err = bw.WriteString(head)
	return a
}

// add writes one element.
func (a *jsonArray) add(v any) {
	if a.err != nil {
		return
	}
	if !a.first {
		if a.err = a.w.WriteByte(','); a.err != nil {
			return
		}
	}
	a.first = false
	a.err = a.enc.Encode(v)
}

// end closes the array with tail, writes v (if not nil) and then after, and flushes.
func (a *jsonArray) end(tail string, v any, after string) error {
	if a.err != nil {
		return a.err
	}
	a.w.WriteString(tail)
	if v != nil {
		if err := a.enc.Encode(v); err != nil {
			return err
		}
	}
	a.w.WriteString(after)
	return a.w.Flush()
}
