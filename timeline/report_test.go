package timeline

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/iopath/iopath/record"
	"github.com/iopath/iopath/timeline/headless"
)

// needChromium skips without chromium, except in CI (see headless.Check).
func needChromium(t *testing.T) {
	if skip, err := headless.Check(); err != nil {
		t.Fatal(err)
	} else if skip != "" {
		t.Skip(skip)
	}
}

func writeReport(t *testing.T, path string, maxSlices int, recs []any) *Timeline {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tl := New(NewReport(f, "iopath test report", maxSlices))
	for _, r := range recs {
		Feed(tl, r)
	}
	if err := tl.Close(); err != nil {
		t.Fatal(err)
	}
	return tl
}

// countBios counts the bios records carry, each once (a traced call's
// writeback bios are listed by the call too).
func countBios(recs []any) int {
	n := 0
	for _, r := range recs {
		switch r := r.(type) {
		case *record.Syscall:
			n += len(r.Bios)
		case *record.Writeback:
			if r.OpID == 0 {
				n += len(r.Bios)
			}
		}
	}
	return n
}

// pixels counts the screenshot's pixels of each colour asked (#rrggbb).
func pixels(t *testing.T, path string, colours ...string) map[string]int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	want := map[uint32]string{}
	for _, c := range colours {
		v, _ := strconv.ParseUint(strings.TrimPrefix(c, "#"), 16, 32)
		want[uint32(v)] = c
	}
	got := map[string]int{}
	r := img.Bounds()
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			if c, ok := want[(cr>>8)<<16|(cg>>8)<<8|cb>>8]; ok {
				got[c]++
			}
		}
	}
	return got
}

func TestReportInChromium(t *testing.T) {
	needChromium(t)
	dir, err := headless.ArtifactDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	fsync := write1ByteFsync()[3].(*record.Syscall) // an fsync with 3 bios, on another thread than the reads
	fsync.Tid = demoPid + 1
	recs := append(read1Byte(), fsync)
	syntheticStream(400, 3, func(r any) { recs = append(recs, r) })
	path := filepath.Join(dir, "report.html")
	tl := writeReport(t, path, 0, recs)
	shot := filepath.Join(dir, "report.png")
	page, err := headless.Load(path, shot, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("report %s, screenshot %s", path, shot)
	if len(page.Console) > 0 || page.Attr("data-errors") != "" {
		t.Errorf("the page logged to the console or threw:\n%s\n(data-errors=%q)", strings.Join(page.Console, "\n"), page.Attr("data-errors"))
	}
	if page.Attr("data-rendered") != "1" {
		t.Fatalf("the renderer did not finish (data-rendered=%q)", page.Attr("data-rendered"))
	}
	want := countBios(recs)
	if got := page.Attr("data-bio-slices"); got != strconv.Itoa(want) || uint64(want) != tl.Stats().Bios {
		t.Errorf("page holds %s bio slices, layout drew %d; the records have %d bios", got, tl.Stats().Bios, want)
	}
	if got := page.Attr("data-flows"); got != strconv.FormatUint(tl.Stats().Flows, 10) {
		t.Errorf("page holds %s arrows, layout drew %d", got, tl.Stats().Flows)
	}
	for _, h := range []string{"read latency", "bio size", "bio device time (D2C)", "dirty → disk"} {
		if !strings.Contains(page.DOM, `data-name="`+h+`"`) {
			t.Errorf("no %q histogram in the page", h)
		}
	}
	// The canvas shows read calls, read bios and write bios.
	px := pixels(t, shot, "#4a9a4a", "#4f81bd", "#f79646", "#2c4d76")
	for c, min := range map[string]int{"#4a9a4a": 100, "#4f81bd": 100, "#f79646": 20, "#2c4d76": 100} {
		if px[c] < min {
			t.Errorf("screenshot has %d pixels of %s, want ≥ %d (%v)", px[c], c, min, px)
		}
	}
}

// A report over its slice limit draws what fits and says what it left out.
func TestReportLimit(t *testing.T) {
	needChromium(t)
	var recs []any
	syntheticStream(300, 3, func(r any) { recs = append(recs, r) })
	path := filepath.Join(t.TempDir(), "report.html")
	tl := writeReport(t, path, 100, recs)
	page, err := headless.Load(path, "", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Console) > 0 {
		t.Errorf("console: %s", strings.Join(page.Console, "\n"))
	}
	slices, _ := strconv.Atoi(page.Attr("data-slices"))
	flows, _ := strconv.Atoi(page.Attr("data-flows"))
	if slices+flows != 100 || !strings.Contains(page.DOM, "not drawn") {
		t.Errorf("page drew %d slices and %d arrows (limit 100; layout %+v) and says nothing left out: %q", slices, flows, tl.Stats(), page.Attr("data-slices"))
	}
}

// A trace without a single call (the command did no IO) still renders.
func TestReportEmpty(t *testing.T) {
	needChromium(t)
	path := filepath.Join(t.TempDir(), "report.html")
	writeReport(t, path, 0, []any{summaryOf(0, 0, 0, 0)})
	page, err := headless.Load(path, "", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Console) > 0 || page.Attr("data-rendered") != "1" || page.Attr("data-bio-slices") != "0" {
		t.Errorf("empty report: console %q, rendered %q, bio slices %q", page.Console, page.Attr("data-rendered"), page.Attr("data-bio-slices"))
	}
}
