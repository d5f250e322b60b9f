package session

import (
	"fmt"
	"io"
	"os"

	"github.com/iopath/iopath/internal/workdir"
	"github.com/iopath/iopath/workloads"
)

// WorkFile is a workload's file, prepared in iopath's own (untraced)
// process, so that the traced child finds it ready and only runs the ops.
type WorkFile struct {
	Path  string
	Kind  string   // workload kind
	Notes []string // caveats from the preparation (e.g. --cold did not work)
	Dev   uint32   // kernel dev_t
	Ino   uint64
	// Cold is the file's page-cache residency right after --cold dropped
	// it; nil without --cold.
	Cold *workloads.Residency
	// Keep keeps the file (and a directory made for it) at Cleanup.
	Keep bool

	prep   *workloads.Prepared
	tmpDir string // directory made for the file, removed by Cleanup unless Keep
}

// PrepareWorkFile creates and lays out the file of spec with
// workloads.Prepare (writing it, syncing it, dropping it from the page cache
// if spec.Cold). Without --dir and --file the file goes to a new work
// directory under DiskBase, after removing those of dead runs (CleanStale,
// said on notes). An existing --file is never removed.
func PrepareWorkFile(spec workloads.Spec, notes io.Writer) (*WorkFile, error) {
	ps := spec.ForLayout() // only the layout matters here
	wf := &WorkFile{Keep: spec.Keep}
	if ps.Dir == "" && ps.File == "" {
		base := DiskBase()
		CleanStale(base, "workload", notes)
		d, err := MkWorkDir(base, "workload")
		if err != nil {
			return nil, fmt.Errorf("creating a directory for the workload's file in %s: %w: set TMPDIR, or give --dir after --", base, err)
		}
		wf.tmpDir, ps.Dir = d, d
		if spec.Keep {
			if err := workdir.MarkKept(d); err != nil {
				os.RemoveAll(d)
				return nil, fmt.Errorf("marking %s as kept: %w", d, err)
			}
		}
	}
	p, err := workloads.Prepare(ps)
	if err != nil {
		if wf.tmpDir != "" {
			os.RemoveAll(wf.tmpDir)
		}
		return nil, err
	}
	wf.prep, wf.Path, wf.Cold, wf.Kind, wf.Notes = p, p.Path, p.Cache, spec.Kind, p.Notes
	if wf.Dev, wf.Ino, err = Inode(p.Path); err != nil {
		wf.Keep = false
		wf.Cleanup(io.Discard)
		return nil, err
	}
	return wf, nil
}

// Cleanup closes the file and removes what PrepareWorkFile created, unless
// Keep (then it says what it kept on notes).
func (wf *WorkFile) Cleanup(notes io.Writer) {
	if wf == nil || wf.prep == nil {
		return
	}
	wf.prep.Spec.Keep = wf.Keep
	if err := wf.prep.Cleanup(); err != nil {
		fmt.Fprintf(notes, "iopath: cleaning up %s: %v\n", wf.Path, err)
	}
	wf.prep = nil
	if wf.tmpDir != "" && !wf.Keep {
		os.RemoveAll(wf.tmpDir)
	}
	if wf.Keep {
		fmt.Fprintf(notes, "kept %s\n", wf.Path)
	}
}

// Annotate adds to the child's report what the preparation did here: the
// child ran without --cold (it would have fdatasync'ed under the trace).
func (wf *WorkFile) Annotate(rep *workloads.Report) {
	if rep == nil {
		return
	}
	if wf.Cold != nil {
		rep.Cold, rep.Cache = true, wf.Cold
	}
	rep.Notes = append(append([]string(nil), wf.Notes...), rep.Notes...)
}

// CachedNow measures how many pages of the file are in the page cache now
// (nil if it cannot).
func (wf *WorkFile) CachedNow() *workloads.Residency {
	f, err := os.Open(wf.Path)
	if err != nil {
		return nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil
	}
	r, err := workloads.CacheResidency(f, fi.Size())
	if err != nil {
		return nil
	}
	return &r
}
