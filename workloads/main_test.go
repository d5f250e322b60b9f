package workloads

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSetSizes(t *testing.T) {
	var s Spec
	if err := s.SetSizes("4k", "1m"); err != nil || s.BlockSize != 4096 || s.FileSize != 1<<20 {
		t.Errorf("SetSizes(4k, 1m): %v, bs %d size %d", err, s.BlockSize, s.FileSize)
	}
	for _, c := range [][3]string{{"0", "", "--bs 0: a size of 0 leaves nothing to do; give a positive size, e.g. --bs 4k"},
		{"", "0", "--size 0: a size of 0"}, {"4q", "", `--bs: invalid size "4q"`}} {
		if err := (&Spec{}).SetSizes(c[0], c[1]); err == nil || !strings.Contains(err.Error(), c[2]) {
			t.Errorf("SetSizes(%q, %q) = %v, want %q", c[0], c[1], err, c[2])
		}
	}
}

// RunReported writes the report (JSON here), keeps the file with Keep and
// says so on notes.
func TestRunReported(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "w.dat")
	var out, notes bytes.Buffer
	s := Spec{Kind: "seq-write", Engine: EnginePsync, File: path, Keep: true, Seed: DefaultSeed}
	if err := s.SetSizes("4k", "64k"); err != nil {
		t.Fatal(err)
	}
	interrupted, err := RunReported(context.Background(), s, &out, &notes, true)
	if err != nil || interrupted {
		t.Fatalf("RunReported: %v, interrupted %v", err, interrupted)
	}
	var r struct {
		Kind string `json:"kind"`
		Ops  int64  `json:"ops"`
	}
	if err := json.Unmarshal(out.Bytes(), &r); err != nil || r.Kind != "seq-write" || r.Ops != 16 {
		t.Errorf("report %+v, %v:\n%s", r, err, out.String())
	}
	if notes.String() != "kept "+path+"\n" {
		t.Errorf("notes %q", notes.String())
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != 64<<10 {
		t.Errorf("kept file: %v, %v", fi, err)
	}
}
