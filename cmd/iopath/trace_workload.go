package main

// `iopath trace --workload KIND [TRACE FLAGS] [-- WORKLOAD FLAGS]` runs
// `iopath workload KIND WORKLOAD FLAGS` as the traced child. The workload's
// file is prepared (written, synced, dropped from the page cache with
// --cold) here, in the tracer's process, which is never traced, and the
// child gets it with --file: the trace holds the workload's own IO only.
// This file also holds the helpers the workload demos use to trace such
// runs (traceWorkloads).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/iopath/iopath/record"
	"github.com/iopath/iopath/render"
	"github.com/iopath/iopath/tracer"
	"github.com/iopath/iopath/tracer/kernel"
	"github.com/iopath/iopath/workloads"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// workloadOwnFlags are the workload flags the tracer handles itself instead
// of passing them to the traced child: where the file lives and whether it
// stays (--dir, --file, --keep), --cold (done before the trace, so its
// fdatasync is not traced) and --json (the child always reports JSON to the
// tracer, which prints the report as the user asked).
var workloadOwnFlags = map[string]bool{"dir": true, "file": true, "keep": true, "cold": true, "json": true}

// tracedWorkload is a parsed `trace --workload KIND -- FLAGS`.
type tracedWorkload struct {
	spec  workloads.Spec // as given (defaults not filled in), validated
	flags []string       // flags for the traced child, as --name=value, without workloadOwnFlags
	json  bool           // the workload's --json: print its report as JSON
}

// parseTracedWorkload parses and validates the workload's kind and flags with
// `iopath workload`'s own flag set, so both accept exactly the same flags.
func parseTracedWorkload(kind string, args []string) (*tracedWorkload, error) {
	if err := workloadArgs(nil, []string{kind}); err != nil {
		return nil, err
	}
	fl := newWorkloadCmd().Flags()
	fl.SetOutput(io.Discard)
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil, fmt.Errorf("the flags after -- are those of `iopath workload %s`: see iopath workload --help", kind)
		}
		return nil, fmt.Errorf("workload flags after --: %w: see iopath workload --help", err)
	}
	if fl.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q after --: give only workload flags there (the kind goes in --workload)", fl.Arg(0))
	}
	var errs []error
	str := func(n string) string { v, err := fl.GetString(n); errs = append(errs, err); return v }
	boolean := func(n string) bool { v, err := fl.GetBool(n); errs = append(errs, err); return v }
	i64 := func(n string) int64 { v, err := fl.GetInt64(n); errs = append(errs, err); return v }
	wf := workloadFlags{bs: str("bs"), size: str("size"), json: boolean("json")}
	s := &wf.spec
	s.Kind, s.Engine = kind, str("engine")
	s.Count, s.FsyncEvery, s.FdatasyncEvery = i64("count"), i64("fsync"), i64("fdatasync")
	s.Duration, _ = fl.GetDuration("duration")
	s.Seed, _ = fl.GetUint64("seed")
	s.Random, s.Overwrite, s.Direct = boolean("random"), boolean("overwrite"), boolean("direct")
	s.Cold, s.Prealloc, s.Keep = boolean("cold"), boolean("prealloc"), boolean("keep")
	s.Fadvise, s.Dir, s.File = str("fadvise"), str("dir"), str("file")
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("reading the workload flags: %w", err) // a flag changed type in workload.go
	}
	if err := wf.parseSizes(); err != nil {
		return nil, err
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	w := &tracedWorkload{spec: *s, json: wf.json}
	fl.Visit(func(f *pflag.Flag) {
		if !workloadOwnFlags[f.Name] {
			w.flags = append(w.flags, "--"+f.Name+"="+f.Value.String())
		}
	})
	return w, nil
}

// args returns the traced child's `iopath workload` arguments for the
// prepared file path (--json is added by startWorkloadChild).
func (w *tracedWorkload) args(path string) []string {
	return append(append([]string{w.spec.Kind}, w.flags...), "--file="+path)
}

// workloadFile is a workload's file, prepared in this (untraced) process.
type workloadFile struct {
	prep   *workloads.Prepared
	path   string
	kind   string   // workload kind
	notes  []string // caveats from the preparation (e.g. --cold did not work)
	dev    uint32   // kernel dev_t
	ino    uint64
	tmpDir string // directory made for the file, removed by cleanup unless keep
	keep   bool
	// cold is the file's page-cache residency right after --cold dropped it; nil without --cold.
	cold *workloads.Residency
}

// prepareWorkloadFile creates and lays out the file of spec with
// workloads.Prepare (writing it, syncing it, dropping it from the page cache
// if spec.Cold), so that the traced child finds it ready and only runs the
// ops. Without --dir and --file the file goes to a new directory under
// $TMPDIR, or under /var/tmp when $TMPDIR is memory-backed (tmpfs), so that
// its IO reaches a disk. An existing --file is never removed.
func prepareWorkloadFile(spec workloads.Spec) (*workloadFile, error) {
	ps := spec
	if ps.Engine == workloads.EngineMmap || ps.Engine == workloads.EngineStdio {
		// Only the layout matters here; the mmap engine would also extend
		// an appended file, which the child does itself.
		ps.Engine = workloads.EnginePsync
	}
	wf := &workloadFile{keep: spec.Keep}
	if ps.Dir == "" && ps.File == "" {
		base := os.TempDir()
		if !describeFS(base).blockDevice && describeFS("/var/tmp").blockDevice {
			base = "/var/tmp"
		}
		d, err := os.MkdirTemp(base, "iopath-workload-")
		if err != nil {
			return nil, fmt.Errorf("creating a directory for the workload's file in %s: %w: set TMPDIR, or give --dir after --", base, err)
		}
		wf.tmpDir, ps.Dir = d, d
	}
	p, err := workloads.Prepare(ps)
	if err != nil {
		if wf.tmpDir != "" {
			os.RemoveAll(wf.tmpDir)
		}
		return nil, err
	}
	wf.prep, wf.path, wf.cold, wf.kind, wf.notes = p, p.Path, p.Cache, spec.Kind, p.Notes
	if wf.dev, wf.ino, err = inode(p.Path); err != nil {
		wf.keep = false
		wf.cleanup(io.Discard)
		return nil, err
	}
	return wf, nil
}

// cleanup closes the file and removes what prepareWorkloadFile created,
// unless keep (then it says what it kept on errw).
func (wf *workloadFile) cleanup(errw io.Writer) {
	if wf == nil || wf.prep == nil {
		return
	}
	wf.prep.Spec.Keep = wf.keep
	if err := wf.prep.Cleanup(); err != nil {
		fmt.Fprintf(errw, "iopath: cleaning up %s: %v\n", wf.path, err)
	}
	wf.prep = nil
	if wf.tmpDir != "" && !wf.keep {
		os.RemoveAll(wf.tmpDir)
	}
	if wf.keep {
		fmt.Fprintf(errw, "kept %s\n", wf.path)
	}
}

// annotate adds to the child's report what the preparation did here: the
// child ran without --cold (it would have fdatasync'ed under the trace).
func (wf *workloadFile) annotate(rep *workloads.Report) {
	if rep == nil {
		return
	}
	if wf.cold != nil {
		rep.Cold, rep.Cache = true, wf.cold
	}
	rep.Notes = append(append([]string(nil), wf.notes...), rep.Notes...)
}

// cachedNow measures how many pages of the file are in the page cache now.
func (wf *workloadFile) cachedNow() *workloads.Residency {
	f, err := os.Open(wf.path)
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

// workloadChild is `iopath workload ... --json` started under a tracer.
type workloadChild struct {
	cmd *exec.Cmd
	out chan []byte // the child's stdout (its JSON report), once closed
}

// startWorkloadChild starts `iopath workload ARGS --json` with startGated
// (stopped at exec, added to t's traced set, then released), so every call
// of the child is traced and nothing of this process is. Its stdout, the
// JSON report, comes back through a pipe (pipes are not traced); its stderr
// is this process's.
func startWorkloadChild(t *tracer.Tracer, args []string) (*workloadChild, error) {
	self, argv, err := selfCommand(append(append([]string{"workload"}, args...), "--json")...)
	if err != nil {
		return nil, err
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	// startGated gives the child os.Stdout: point it at the pipe while the
	// child starts. Nothing else in this process writes to stdout meanwhile
	// (the printers hold their own writer, and startGated is synchronous).
	saved := os.Stdout
	os.Stdout = pw
	c, err := startGated(self, argv, t)
	os.Stdout = saved
	pw.Close()
	if err != nil {
		pr.Close()
		return nil, err
	}
	ch := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(pr)
		pr.Close()
		ch <- b
	}()
	return &workloadChild{cmd: c, out: ch}, nil
}

// pid is the child's process id.
func (c *workloadChild) pid() uint32 { return uint32(c.cmd.Process.Pid) }

// wait waits for the child to exit and decodes its report. code is its exit
// status (128+signal when a signal ended it); rep is nil when it printed no
// report (it failed before running, and said why on stderr).
func (c *workloadChild) wait() (rep *workloads.Report, code int, err error) {
	werr := c.cmd.Wait()
	out := <-c.out
	var ee *exec.ExitError
	switch {
	case errors.As(werr, &ee):
		code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
	case werr != nil:
		return nil, 127, werr
	}
	if i := bytes.IndexByte(out, '{'); i >= 0 {
		rep = &workloads.Report{}
		if err := json.Unmarshal(out[i:], rep); err != nil {
			return nil, code, fmt.Errorf("reading the workload's report: %w", err)
		}
	}
	return rep, code, nil
}

// interrupt asks the child to stop (SIGINT: the workload reports what it
// did), and kills it if it has not exited after grace.
func (c *workloadChild) interrupt(grace time.Duration) {
	c.cmd.Process.Signal(os.Interrupt)
	time.AfterFunc(grace, func() { c.cmd.Process.Kill() })
}

// runTraceWorkload is `iopath trace --workload KIND [-- WORKLOAD FLAGS]`.
// --duration and SIGINT/SIGTERM interrupt the workload (it still reports);
// the trace ends when the child exits (after --wait-writeback if given).
func runTraceWorkload(cmd *cobra.Command, f *traceFlags, args []string) error {
	if len(f.pids) > 0 || f.comm != "" {
		return errors.New("--workload traces the workload's own process: drop -p and --comm")
	}
	if n := cmd.ArgsLenAtDash(); n > 0 || n < 0 && len(args) > 0 { // arguments before --
		return fmt.Errorf("unexpected argument %q: put the workload's flags after --, e.g. iopath trace --workload %s -- --count 100", args[0], f.workload)
	}
	w, err := parseTracedWorkload(f.workload, args)
	if err != nil {
		return err
	}
	if err := tracer.Preflight(); err != nil {
		return err
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	file, err := prepareWorkloadFile(w.spec)
	if err != nil {
		return err
	}
	defer file.cleanup(cmd.ErrOrStderr())
	if ctx.Err() != nil {
		return exitError{code: 130}
	}
	force := map[string]tracer.Mechanism{}
	for k, v := range f.force {
		force[k] = tracer.Mechanism(v)
	}
	out := render.NewPrinter(cmd.OutOrStdout(), f.json, f.quiet)
	tally := &persistTally{out: activeTimeline.tee(out.Record)}
	t, err := tracer.New(tracer.Options{All: f.all, RingBufBytes: f.ringbuf, MaxDirtyPages: f.maxDirty,
		Force: force, NoWriteback: f.noWriteback}, tally.record)
	if err != nil {
		return err
	}
	defer t.Close()
	defer out.Flush()
	started(cmd.ErrOrStderr(), t, out, force)
	stop := ctx
	if f.duration > 0 {
		var c2 context.CancelFunc
		stop, c2 = context.WithTimeout(ctx, f.duration)
		defer c2()
	}
	if f.readyFile != "" {
		if err := os.WriteFile(f.readyFile, []byte(fmt.Sprintln(os.Getpid())), 0o644); err != nil {
			return fmt.Errorf("--ready-file: %w", err)
		}
		defer os.Remove(f.readyFile)
	}

	child, err := startWorkloadChild(t, w.args(file.path))
	if err != nil {
		return err
	}
	type result struct {
		rep  *workloads.Report
		code int
		err  error
	}
	done := make(chan result, 1)
	runCtx, stopRun := context.WithCancel(context.Background())
	defer stopRun()
	go func() {
		rep, code, err := child.wait()
		if f.waitWriteback > 0 && err == nil && code == 0 {
			waitWriteback(ctx, t, f.waitWriteback, cmd.ErrOrStderr())
		}
		done <- result{rep, code, err}
		stopRun()
	}()
	go func() {
		select {
		case <-stop.Done():
			child.interrupt(10 * time.Second)
		case <-runCtx.Done():
		}
	}()
	if err := t.Run(runCtx, f.settle); err != nil {
		child.cmd.Process.Kill()
		<-done
		return err
	}
	res := <-done
	if res.err != nil {
		return res.err
	}
	file.annotate(res.rep)
	after := file.cachedNow()
	sum := t.Summary() // once: it folds the kernel's hit counters in
	wout := cmd.OutOrStdout()
	out.Flush() // the records before the report
	if res.rep != nil && !f.json {
		if w.json {
			e := json.NewEncoder(wout)
			e.SetIndent("", "  ")
			e.Encode(res.rep)
		} else {
			res.rep.WriteText(wout)
		}
	}
	activeTimeline.summary(sum)
	out.Summary(sum)
	rec := newWorkloadRecord(sum, child.pid(), file, res.rep, &tally.persistCounts, after)
	if f.json {
		out.WriteJSON(rec)
		out.Flush()
	} else {
		fmt.Fprint(wout, rec.text(f.waitWriteback > 0))
	}
	if res.code == 130 && res.rep != nil && res.rep.Interrupted && ctx.Err() == nil {
		res.code = 0 // interrupted at --duration, as asked
	}
	if res.code != 0 {
		return exitError{code: res.code}
	}
	if res.rep == nil {
		return errors.New("the workload printed no report")
	}
	return nil
}

// persistCounts adds up "persisted" records by process and file: what
// became of the pages traced write calls dirtied. Pages are 4 KiB.
type persistCounts struct {
	byKey map[persistKey]*persistTotals
}

type persistKey struct {
	pid uint32
	dev string
	ino uint64
}

// persistTotals are pages by outcome; flusher pages were written by
// writeback outside any traced call (a call's own writes, O_SYNC or fsync,
// are in its record's bios).
type persistTotals struct {
	written, flusher, removed, failed uint64
}

func (pc *persistCounts) add(p *record.Persisted) {
	if pc.byKey == nil {
		pc.byKey = map[persistKey]*persistTotals{}
	}
	k := persistKey{p.Pid, p.Dev, p.Ino}
	t := pc.byKey[k]
	if t == nil {
		t = &persistTotals{}
		pc.byKey[k] = t
	}
	n := uint64(p.Pages)
	switch p.Outcome {
	case "written":
		t.written += n
		if p.ByOpID == 0 {
			t.flusher += n
		}
	case "removed":
		t.removed += n
	case "failed":
		t.failed += n
	}
}

func (pc *persistCounts) get(pid uint32, dev string, ino uint64) persistTotals {
	if t := pc.byKey[persistKey{pid, dev, ino}]; t != nil {
		return *t
	}
	return persistTotals{}
}

// persistTally counts "persisted" records on their way to the printer.
type persistTally struct {
	persistCounts
	out func(any)
}

func (pt *persistTally) record(r any) {
	if p, ok := r.(*record.Persisted); ok {
		pt.add(p)
	}
	pt.out(r)
}

// workloadRecord ("type":"workload") is what one traced `iopath workload`
// run cost, from the tracer's summary and records for its process and its
// file, with the workload's own report. Bytes are bytes, pages 4 KiB
// page-cache pages; ratios are plain fractions.
type workloadRecord struct {
	Type string `json:"type"` // "workload"
	Kind string `json:"kind"`
	Pid  uint32 `json:"pid"`  // the traced child
	File string `json:"file"` // the workload's file
	Dev  string `json:"dev"`
	Ino  uint64 `json:"ino"`

	// Ops are the workload's ops (its report), or the calls on its file when
	// it printed no report.
	Ops int64 `json:"ops"`
	// FileReadCalls and FileWriteCalls are the read- and write-family calls
	// the tracer saw on the file; OtherCalls the process's calls on other
	// files (Go runtime start-up, /proc).
	FileReadCalls  uint64 `json:"file_read_calls"`
	FileWriteCalls uint64 `json:"file_write_calls"`
	OtherCalls     uint64 `json:"other_calls"`
	// ReadBytesRequested is what the ops asked to read: the bytes requested
	// by the read calls on the file, or for the mmap engine (no calls) the
	// bytes its reads copied.
	ReadBytesRequested uint64 `json:"read_bytes_requested"`

	// DiskBytesRead: the process's disk reads, its calls' bios and those of
	// its page faults (mmap).
	DiskBytesRead uint64 `json:"disk_bytes_read"`
	// DiskBytesWritten: written by its calls themselves (O_DIRECT, O_SYNC,
	// fsync family).
	DiskBytesWritten uint64 `json:"disk_bytes_written"`
	// WritebackBytes: pages of its writes that writeback (the flusher)
	// carried to disk during the trace, × 4096.
	WritebackBytes uint64 `json:"writeback_bytes"`
	// DiskBytesPerOp is (read + written + writeback bytes) / ops.
	DiskBytesPerOp float64 `json:"disk_bytes_per_op"`
	// Amplification is disk bytes read / read bytes requested (0 when no read was requested).
	Amplification float64 `json:"amplification"`

	// Page cache, for the read calls on the file: requested = hit + missed;
	// added counts readahead too. HitRatio = hit / requested (0 when none).
	PagesRequested uint64  `json:"pages_requested"`
	PagesHit       uint64  `json:"pages_hit"`
	PagesMissed    uint64  `json:"pages_missed"`
	PagesAdded     uint64  `json:"pages_added"`
	HitRatio       float64 `json:"hit_ratio"`
	// CachedAfter is the file's page-cache residency when the workload ended.
	CachedAfter *workloads.Residency `json:"cached_after,omitempty"`

	// Writeback: pages the file's calls dirtied; of those seen reaching the
	// disk (persisted), removed before writeback (truncated or evicted) or
	// failed; and pending: tracked dirty pages not yet seen on disk when the
	// trace ended.
	DirtiedPages   uint64 `json:"dirtied_pages"`
	PersistedPages uint64 `json:"persisted_pages"`
	RemovedPages   uint64 `json:"removed_pages"`
	FailedPages    uint64 `json:"failed_pages"`
	PendingPages   uint64 `json:"pending_pages"`

	Report *workloads.Report `json:"report,omitempty"`

	fs        string // filesystem type of the file, for the text
	unmatched uint64 // dirty folios written in bios beyond the tracer's matches per bio (truncations wb_matches)
}

// summaryTotals returns the totals of pid and of the file (dev, ino).
func summaryTotals(sum *record.Summary, pid uint32, dev string, ino uint64) (p, f record.Totals) {
	for _, s := range sum.Pids {
		if s.Pid == pid {
			p = s.Totals
		}
	}
	for _, s := range sum.Files {
		if s.Dev == dev && s.Ino == ino {
			f = s.Totals
		}
	}
	return p, f
}

// newWorkloadRecord computes a run's record from the summary (per pid and
// per file), the persisted pages counted from the records, and its report.
func newWorkloadRecord(sum *record.Summary, pid uint32, file *workloadFile, rep *workloads.Report, pc *persistCounts, after *workloads.Residency) *workloadRecord {
	dev := kernel.Dev(file.dev)
	pt, ft := summaryTotals(sum, pid, dev, file.ino)
	wb := pc.get(pid, dev, file.ino)
	r := &workloadRecord{Type: "workload", Pid: pid, File: file.path, Dev: dev, Ino: file.ino,
		FileReadCalls: ft.ReadCalls, FileWriteCalls: ft.WriteCalls, OtherCalls: pt.Calls - min(pt.Calls, ft.Calls),
		ReadBytesRequested: ft.ReadBytesReq,
		DiskBytesRead:      pt.DiskBytesRead, DiskBytesWritten: pt.DiskBytesWrite, WritebackBytes: wb.flusher * 4096,
		PagesHit: ft.PagesHit, PagesMissed: ft.PagesMissed, PagesAdded: ft.PagesAdded,
		PagesRequested: ft.PagesHit + ft.PagesMissed, CachedAfter: after,
		DirtiedPages: ft.DirtiedPages, PersistedPages: wb.written, RemovedPages: wb.removed, FailedPages: wb.failed,
		PendingPages: sum.DirtyPending, Report: rep, fs: describeFS(file.path).fsType, unmatched: sum.Truncations["wb_matches"]}
	r.Kind = file.kind
	r.Ops = int64(ft.ReadCalls + ft.WriteCalls)
	if rep != nil {
		r.Ops = rep.Ops
		if rep.Engine == workloads.EngineMmap && !strings.Contains(rep.Kind, "write") {
			r.ReadBytesRequested = uint64(rep.Bytes)
		}
	}
	if r.Ops > 0 {
		r.DiskBytesPerOp = float64(r.DiskBytesRead+r.DiskBytesWritten+r.WritebackBytes) / float64(r.Ops)
	}
	if r.ReadBytesRequested > 0 {
		r.Amplification = float64(r.DiskBytesRead) / float64(r.ReadBytesRequested)
	}
	if r.PagesRequested > 0 {
		r.HitRatio = float64(r.PagesHit) / float64(r.PagesRequested)
	}
	return r
}

// text is the "workload under trace" section printed after the summary.
// waited says whether --wait-writeback was given.
func (r *workloadRecord) text(waited bool) string {
	var b strings.Builder
	b.WriteString("\n--- workload under trace ---\n")
	fmt.Fprintf(&b, "workload:      %s, pid %d, file %s (%s, dev %s ino %d)\n", r.Kind, r.Pid, r.File, r.fs, r.Dev, r.Ino)
	if rep := r.Report; rep != nil && rep.Cache != nil {
		fmt.Fprintf(&b, "               dropped from the page cache before the trace: %d of %d pages still cached (%s)\n",
			rep.Cache.CachedPages, rep.Cache.TotalPages, rep.Cache.Method)
	}
	src := "the workload's report"
	if r.Report == nil {
		src = "no report: calls on the file"
	}
	fmt.Fprintf(&b, "ops:           %d (%s)\n", r.Ops, src)
	fmt.Fprintf(&b, "calls:         %d reads and %d writes on the file; %d other calls by the process (Go runtime start-up, /proc)\n",
		r.FileReadCalls, r.FileWriteCalls, r.OtherCalls)
	fmt.Fprintf(&b, "disk:          %s read, %s written by the calls, %s carried by writeback: %.1f disk bytes per op\n",
		human(r.DiskBytesRead), human(r.DiskBytesWritten), human(r.WritebackBytes), r.DiskBytesPerOp)
	if kernel.MemoryOnly(r.fs) {
		fmt.Fprintf(&b, "               the file is on %s, which has no block device: it never reaches a disk\n", r.fs)
	}
	if r.ReadBytesRequested > 0 {
		fmt.Fprintf(&b, "amplification: %.2f (%d disk bytes read / %d bytes requested by the reads)\n", r.Amplification, r.DiskBytesRead, r.ReadBytesRequested)
	} else {
		b.WriteString("amplification: - (no bytes requested by reads)\n")
	}
	switch {
	case r.PagesRequested > 0:
		fmt.Fprintf(&b, "page cache:    hit ratio %.2f%% (%d hits / %d pages requested by the calls on the file)\n", 100*r.HitRatio, r.PagesHit, r.PagesRequested)
		fmt.Fprintf(&b, "               %d missed; %d pages added, readahead included\n", r.PagesMissed, r.PagesAdded)
	case r.Report != nil && r.Report.Direct:
		b.WriteString("page cache:    bypassed (O_DIRECT): no page requested through it\n")
	case r.Report != nil && r.Report.Engine == workloads.EngineMmap:
		fmt.Fprintf(&b, "page cache:    no calls: the mmap engine copies through page faults (%d major, %d minor); their disk reads count above,\n",
			r.Report.MajorFaults, r.Report.MinorFaults)
		b.WriteString("               pages dirtied through the mapping are not followed (the tracer follows the pages calls dirty)\n")
	default:
		b.WriteString("page cache:    no page requested by read calls\n")
	}
	if c := r.CachedAfter; c != nil {
		fmt.Fprintf(&b, "               afterwards %d of the file's %d pages were cached (%s)\n", c.CachedPages, c.TotalPages, c.Method)
	}
	fmt.Fprintf(&b, "writeback:     %d pages dirtied, %d persisted, %d pending (dirty, not seen on disk yet)", r.DirtiedPages, r.PersistedPages, r.PendingPages)
	if r.RemovedPages > 0 || r.FailedPages > 0 {
		fmt.Fprintf(&b, ", %d removed before writeback, %d failed", r.RemovedPages, r.FailedPages)
	}
	if r.PendingPages > 0 && !waited {
		b.WriteString("; --wait-writeback 40s follows them to the disk")
	}
	b.WriteString("\n")
	if r.unmatched > 0 {
		fmt.Fprintf(&b, "               %d dirty folios were written in bios carrying more than 16 calls' pages, beyond what the tracer matches per bio (truncations wb_matches): persisted is a lower bound, pending an upper bound\n", r.unmatched)
	}
	return b.String()
}

// workloadRun is one `iopath workload` run of a demo: its arguments, the
// file prepared for it, and, once traced, its pid and report.
type workloadRun struct {
	args   []string // KIND and flags, without --file and --json
	file   *workloadFile
	pid    uint32
	report *workloads.Report
}

// traceWorkloads traces the runs one after another under one tracer (the
// BPF programs load once) and returns every record, the summary (read once:
// it folds the kernel's hit counters in) and the hooks. opts.All streams
// every call. SIGINT/SIGTERM interrupt the child and end with exit status 130.
func traceWorkloads(opts tracer.Options, runs []*workloadRun) ([]any, *record.Summary, []tracer.HookStatus, error) {
	p := render.NewPrinter(io.Discard, false, true)
	p.Collect = true
	t, err := tracer.New(opts, activeTimeline.tee(p.Record))
	if err != nil {
		return nil, nil, nil, err
	}
	defer t.Close()
	sig, stopSig := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stopSig()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- t.Run(ctx, 2*time.Second) }()
	for _, r := range runs {
		if err = r.trace(sig, t); err != nil {
			break
		}
	}
	cancel()
	if e := <-runErr; err == nil {
		err = e
	}
	if err != nil {
		return nil, nil, nil, err
	}
	sum := t.Summary()
	activeTimeline.summary(sum)
	return p.Collected, sum, t.Hooks, nil
}

// trace runs the workload as a traced child of t and waits for it.
func (r *workloadRun) trace(sig context.Context, t *tracer.Tracer) error {
	c, err := startWorkloadChild(t, append(append([]string(nil), r.args...), "--file="+r.file.path))
	if err != nil {
		return err
	}
	stop := context.AfterFunc(sig, func() { c.interrupt(5 * time.Second) })
	defer stop()
	rep, code, err := c.wait()
	switch {
	case sig.Err() != nil:
		return exitError{code: 130}
	case err != nil:
		return err
	case code != 0 || rep == nil:
		return fmt.Errorf("`iopath workload %s --file=%s` failed (exit status %d)", strings.Join(r.args, " "), r.file.path, code)
	}
	r.file.annotate(rep)
	r.pid, r.report = c.pid(), rep
	return nil
}

// record is the run's "workload" record, from the demo's records and summary.
func (r *workloadRun) record(recs []any, sum *record.Summary, after *workloads.Residency) *workloadRecord {
	var pc persistCounts
	for _, x := range recs {
		if p, ok := x.(*record.Persisted); ok {
			pc.add(p)
		}
	}
	return newWorkloadRecord(sum, r.pid, r.file, r.report, &pc, after)
}

// demoJSON prints a demo's raw evidence as JSON Lines: the syscall records
// of each run's file, the summary, then one "workload" record per run.
func demoJSON(w io.Writer, recs []any, sum *record.Summary, wrecs []*workloadRecord) {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, wr := range wrecs {
		for _, c := range fileRecords(recs, demoKdev(wr.Dev), wr.Ino) {
			enc.Encode(c)
		}
	}
	enc.Encode(sum)
	for _, wr := range wrecs {
		enc.Encode(wr)
	}
}

// demoKdev parses "major:minor" back to the kernel's dev_t encoding.
func demoKdev(dev string) uint32 {
	var major, minor uint32
	fmt.Sscanf(dev, "%d:%d", &major, &minor)
	return major<<20 | minor
}

// demoFiles prepares one file per spec in dir for a demo; cleanup closes
// them (the demo's directory cleanup removes them unless --keep).
func demoFiles(dir string, keep bool, specs ...workloads.Spec) ([]*workloadFile, func(), error) {
	var files []*workloadFile
	cleanup := func() {
		for _, f := range files {
			f.cleanup(io.Discard)
		}
	}
	for _, s := range specs {
		s.Dir, s.Keep = dir, keep
		f, err := prepareWorkloadFile(s)
		if err != nil {
			cleanup()
			return nil, nil, err
		}
		f.keep = true // the demo directory's cleanup decides
		files = append(files, f)
	}
	return files, cleanup, nil
}

// demoOnDisk refuses a demo directory without a block device (tmpfs), whose
// reads never reach a disk.
// demoSetup does what every workload demo needs first: root and BTF, a
// directory for its files (removed by cleanup, also on a signal), on a
// filesystem with a block device.
func demoSetup(f *demoFlags) (dir string, fs fsInfo, cleanup func(), err error) {
	if err := tracer.Preflight(); err != nil {
		return "", fsInfo{}, nil, err
	}
	dir, cleanup, err = demoDir(f)
	if err != nil {
		return "", fsInfo{}, nil, err
	}
	if fs, err = demoOnDisk(dir); err != nil {
		cleanup()
		return "", fsInfo{}, nil, err
	}
	return dir, fs, cleanup, nil
}

func demoOnDisk(dir string) (fsInfo, error) {
	fs := describeFS(dir)
	if !fs.blockDevice {
		return fs, fmt.Errorf("%s is on %s, which has no block device: its reads never reach a disk; use --dir on a disk-backed filesystem such as /var/tmp", filepath.Dir(dir), fs.fsType)
	}
	return fs, nil
}
