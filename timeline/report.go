package timeline

import (
	_ "embed"
	"io"

	"github.com/iopath/iopath/record"
)

//go:embed report.js
var reportJS string

//go:embed report.css
var reportCSS string

// DefaultReportSlices is how many slices a Report draws by default: a
// browser stays responsive with a few hundred thousand; the rest are
// counted and the page says so (the Chrome trace has them all).
const DefaultReportSlices = 250_000

// Report writes a self-contained HTML page (no network, no external script:
// its renderer, report.js, and its data are inside the page) showing the
// timeline on a canvas, with latency and size histograms and the summary's
// totals. Slices and flows are streamed into the page as they come
// (bounded memory); tracks, histograms and summaries follow at Close.
type Report struct {
	out     *jsonArray
	limit   int
	drawn   int
	omitted map[string]uint64 // category (or "flow") -> not drawn
	tracks  []reportTrack
	hists   *histograms
	sums    []*record.Summary
	title   string
}

type reportTrack struct {
	Kind    string `json:"kind"`
	Pid     uint32 `json:"pid"`
	Tid     uint32 `json:"tid"`
	Process string `json:"process"`
	Thread  string `json:"thread"`
	Sort    int    `json:"sort"`
}

// NewReport returns an Output writing an HTML report to w (not closed by
// Close), drawing at most maxSlices slices and arrows (≤ 0: DefaultReportSlices).
func NewReport(w io.Writer, title string, maxSlices int) *Report {
	if maxSlices <= 0 {
		maxSlices = DefaultReportSlices
	}
	// encoding/json escapes <, > and & (SetEscapeHTML defaults to true):
	// no string in the data can end the <script> element holding it.
	return &Report{out: newJSONArray(w, reportHead(title)), limit: maxSlices, omitted: map[string]uint64{}, tracks: []reportTrack{},
		hists: newHistograms(), title: title}
}

func reportHead(title string) string {
	t := htmlEscape(title)
	return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>` + t + `</title>
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:">
<style>` + reportCSS + `</style></head>
<body data-rendered="0">
<script>window.iopathErrors=[];addEventListener("error",function(e){window.iopathErrors.push(String(e.message));document.body.dataset.errors=window.iopathErrors.length;});</script>
<h1>` + t + `</h1>
<div id="meta"></div>
<div id="controls">wheel: zoom · drag: pan · double-click: whole trace · hover: details</div>
<div id="timeline"><canvas id="tl"></canvas><div id="tip"></div></div>
<h2>Histograms</h2><div id="hists"></div>
<h2>Summary</h2><div id="summary"></div>
<script type="application/json" id="iopath-items">[
`
}

func htmlEscape(s string) string {
	var b []byte
	for _, r := range s {
		switch r {
		case '<':
			b = append(b, "&lt;"...)
		case '>':
			b = append(b, "&gt;"...)
		case '&':
			b = append(b, "&amp;"...)
		case '"':
			b = append(b, "&quot;"...)
		default:
			b = append(b, string(r)...)
		}
	}
	return string(b)
}

// Track remembers a track (written at Close, with the page's metadata).
func (r *Report) Track(t *Track) {
	r.tracks = append(r.tracks, reportTrack{t.Kind, t.Pid, t.Tid, t.Process, t.Thread, t.Sort})
}

// Slice writes ["s", track, start µs, duration µs, name, category, args].
func (r *Report) Slice(s *Slice) {
	r.hists.add(s)
	if r.drawn >= r.limit {
		r.omitted[s.Cat]++
		return
	}
	r.drawn++
	r.out.add([]any{"s", s.Track.Index, us(s.StartNs), us(s.DurNs), s.Name, s.Cat, s.Args})
}

// Flow writes ["f", [[track, ts µs], …]].
func (r *Report) Flow(f *Flow) {
	if r.drawn >= r.limit {
		r.omitted["flow"]++
		return
	}
	r.drawn++
	pts := make([][2]float64, len(f.Points))
	for i, p := range f.Points {
		pts[i] = [2]float64{float64(p.Track.Index), us(p.TsNs)}
	}
	r.out.add([]any{"f", pts})
}

// Summary keeps a summary for the page.
func (r *Report) Summary(s *record.Summary) { r.sums = append(r.sums, s) }

// Close writes the tracks, histograms, summaries and the renderer, and ends the page.
func (r *Report) Close(st Stats) error {
	meta := map[string]any{"title": r.title, "tracks": r.tracks, "layout": st, "limit": r.limit,
		"omitted": r.omitted, "histograms": r.hists.list(), "summaries": r.sums}
	return r.out.end("]</script>\n<script type=\"application/json\" id=\"iopath-meta\">", meta,
		"</script>\n<script>\n"+reportJS+"\n</script>\n</body></html>\n")
}

// Omitted is how many slices and arrows the page does not draw (past its limit).
func (r *Report) Omitted() uint64 {
	var n uint64
	for _, v := range r.omitted {
		n += v
	}
	return n
}

// histograms are exact counts over every slice, drawn or not, in
// power-of-two buckets.
type histograms struct {
	byName map[string]*hist
	order  []string
}

// hist counts values in buckets [2^i, 2^(i+1)) (bucket 0 also holds 0).
type hist struct {
	Name   string     `json:"name"`
	Unit   string     `json:"unit"` // ns or bytes
	Count  uint64     `json:"count"`
	Sum    uint64     `json:"sum"`
	Max    uint64     `json:"max"`
	Counts [64]uint64 `json:"counts"`
}

func newHistograms() *histograms { return &histograms{byName: map[string]*hist{}} }

func (h *histograms) get(name, unit string) *hist {
	x := h.byName[name]
	if x == nil {
		x = &hist{Name: name, Unit: unit}
		h.byName[name] = x
		h.order = append(h.order, name)
	}
	return x
}

func (x *hist) add(v uint64) {
	x.Count++
	x.Sum += v
	x.Max = max(x.Max, v)
	b := 0
	for v > 1 && b < 63 {
		v >>= 1
		b++
	}
	x.Counts[b]++
}

// add counts a slice: call latency per syscall, fault latency per kind, bio size, device time
// (D2C) and dirty-to-disk time.
func (h *histograms) add(s *Slice) {
	switch s.Cat {
	case catSyscall, catFault:
		h.get(s.Name+" latency", "ns").add(s.DurNs)
	case catBio:
		if b, ok := s.Args["bytes"].(uint32); ok {
			h.get("bio size", "bytes").add(uint64(b))
		}
	case catD2C:
		h.get("bio device time (D2C)", "ns").add(s.DurNs)
	case catDirty:
		h.get("dirty → disk", "ns").add(s.DurNs)
	}
}

func (h *histograms) list() []*hist {
	out := make([]*hist, 0, len(h.order))
	for _, n := range h.order {
		out = append(out, h.byName[n])
	}
	return out
}
