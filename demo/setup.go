package demo

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/iopath/iopath/record"
	"github.com/iopath/iopath/render"
	"github.com/iopath/iopath/session"
	"github.com/iopath/iopath/tracer"
	"github.com/iopath/iopath/tracer/kernel"
	"github.com/iopath/iopath/workloads"
)

// workDir returns a new directory for the demo's files (in o.Dir, or
// session.DiskBase), after removing those of dead runs there, and its
// cleanup (which keeps it with --keep).
func workDir(o *Options) (string, func(), error) {
	base := o.Dir
	if base != "" {
		st, err := os.Stat(base)
		if err != nil {
			return "", nil, fmt.Errorf("--dir %s: %w: create it or choose another directory", base, err)
		}
		if !st.IsDir() {
			return "", nil, fmt.Errorf("--dir %s is not a directory", base)
		}
		if kfs := kernel.PseudoFS(base); kfs != "" {
			return "", nil, fmt.Errorf("--dir %s is on %s, a kernel filesystem that holds no files one can create: choose a directory on a disk-backed filesystem, e.g. --dir /var/tmp", base, kfs)
		}
	} else {
		base = session.DiskBase()
	}
	// First: a run in another pid namespace must not read host pids in
	// the stale sysctl records nor set a sysctl before being refused.
	if err := session.CheckPidNamespace(); err != nil {
		return "", nil, err
	}
	session.CleanStale(base, "demo", o.Notes)
	session.RestoreStaleSysctls(o.Notes)
	d, err := session.MkWorkDir(base, "demo")
	if err != nil {
		if o.Dir != "" {
			return "", nil, fmt.Errorf("--dir %s: cannot create files there (%w): choose a writable directory", o.Dir, err)
		}
		return "", nil, fmt.Errorf("creating a temp dir: %w: set TMPDIR to a writable directory", err)
	}
	return d, func() {
		if !o.Keep {
			os.RemoveAll(d)
		}
	}, nil
}

// setup does what every demo needs first: root and BTF, a directory for
// its files (removed by cleanup), on a filesystem with a block device
// (what is refused says what the demo would not show: "reads never reach
// a disk").
func setup(o *Options, refused string) (dir string, fs session.FS, cleanup func(), err error) {
	if err := tracer.Preflight(); err != nil {
		return "", session.FS{}, nil, err
	}
	dir, cleanup, err = workDir(o)
	if err != nil {
		return "", session.FS{}, nil, err
	}
	fs = session.DescribeFS(dir)
	if !fs.BlockDevice {
		cleanup()
		return "", fs, nil, fmt.Errorf("%s is on %s, which has no block device: %s; use --dir on a disk-backed filesystem such as /var/tmp", filepath.Dir(dir), fs.Type, refused)
	}
	return dir, fs, cleanup, nil
}

// workSet is a workload demo's directory and its prepared files.
type workSet struct {
	dir   string
	fs    session.FS
	files []*session.WorkFile
	close func() // closes the files and removes the directory (unless --keep)
}

// setupFiles is setup, then one prepared file per spec in the directory.
func setupFiles(o *Options, refused string, specs ...workloads.Spec) (*workSet, error) {
	dir, fs, cleanup, err := setup(o, refused)
	if err != nil {
		return nil, err
	}
	files, closeFiles, err := prepareFiles(dir, o.Keep, specs...)
	if err != nil {
		cleanup()
		return nil, err
	}
	return &workSet{dir: dir, fs: fs, files: files, close: func() { closeFiles(); cleanup() }}, nil
}

// coldFilesLine is the "files:" line of a demo whose files were made
// cold: size bytes each, in the set's directory.
func (ws *workSet) coldFilesLine(size int64) string {
	return fmt.Sprintf("files: two fresh %s files in %s, %s on %s (disk %s, read_ahead_kb=%d), each dropped from the page cache\n",
		render.Bytes(uint64(size)), ws.dir, ws.fs.Type, kernel.Dev(ws.fs.Dev), ws.fs.Disk, ws.fs.ReadAheadKB)
}

// prepareFiles prepares one file per spec in dir; cleanup closes them (the demo
// directory's cleanup removes them unless --keep).
func prepareFiles(dir string, keep bool, specs ...workloads.Spec) ([]*session.WorkFile, func(), error) {
	var out []*session.WorkFile
	cleanup := func() {
		for _, f := range out {
			f.Cleanup(io.Discard)
		}
	}
	for _, s := range specs {
		s.Dir, s.Keep = dir, keep
		f, err := session.PrepareWorkFile(s, io.Discard)
		if err != nil {
			cleanup()
			return nil, nil, err
		}
		f.Keep = true // the demo directory's cleanup decides
		out = append(out, f)
	}
	return out, cleanup, nil
}

// open loads the tracer for a demo; its records are collected into tr.recs
// and the bios no record carries into tr.unattr (read them after End).
func open(o *Options, topts tracer.Options, settle time.Duration, tr *traced) (*session.Session, error) {
	if err := o.Out.Err(); err != nil {
		return nil, err // what it would explain cannot be written
	}
	sink := func(r any) { tr.recs = append(tr.recs, r) }
	if o.Tee != nil {
		sink = o.Tee(sink)
	}
	attached := func(t *tracer.Tracer) {
		t.Engine.UnattributedBio = func(pid uint32, cause string, b record.Bio) {
			tr.unattr = append(tr.unattr, pidBio{pid, cause, b})
		}
	}
	return session.Open(o.Signals, session.Options{Tracer: topts, Settle: settle, Notes: o.Notes, Record: sink, Attached: attached})
}
