package workloads

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"golang.org/x/sys/unix"
)

// jobHists are a job's latency histograms, as a job process sends them to
// the parent that aggregates them.
type jobHists struct {
	Lat  *hdrhistogram.Snapshot `json:"lat"`
	Sync *hdrhistogram.Snapshot `json:"sync"`
	Slat *hdrhistogram.Snapshot `json:"slat,omitempty"`
	Clat *hdrhistogram.Snapshot `json:"clat,omitempty"`
	Sums [3]int64               `json:"sums"` // exact ns sums of slat, clat, lat
}

// runThreads runs the jobs as threads of this process, started together.
func (p *Prepared) runThreads(ctx context.Context) (*Report, error) {
	jobs := append([]*job{&p.job}, p.threads...)
	n := len(jobs)
	// A job in a raw system call keeps its P: give every job one, and one more for the rest.
	if runtime.GOMAXPROCS(0) < n+1 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(n + 1))
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	runtime.GC()
	var ready, finished sync.WaitGroup
	ready.Add(n)
	start := make(chan struct{})
	gate := func() { ready.Done(); <-start }
	reps := make([]*Report, n)
	errs := make([]error, n)
	for i, j := range jobs {
		finished.Go(func() {
			reps[i], errs[i] = p.runJob(ctx, j, i, gate)
			if errs[i] != nil {
				cancel() // the others stop too
			}
		})
	}
	ready.Wait()
	close(start)
	finished.Wait()
	rep := p.aggregate(reps)
	return rep, jobsError(errs)
}

// jobsError is one line naming each failed job and its error; jobs that
// failed the same way share one mention ("jobs 0, 1: ...").
func jobsError(errs []error) error {
	var msgs []string
	jobs := map[string][]string{}
	for i, err := range errs {
		if err == nil {
			continue
		}
		m := err.Error()
		if _, ok := jobs[m]; !ok {
			msgs = append(msgs, m)
		}
		jobs[m] = append(jobs[m], strconv.Itoa(i))
	}
	if len(msgs) == 0 {
		return nil
	}
	parts := make([]string, len(msgs))
	for i, m := range msgs {
		which := "job " + jobs[m][0]
		if len(jobs[m]) > 1 {
			which = "jobs " + strings.Join(jobs[m], ", ")
		}
		parts[i] = which + ": " + strings.ReplaceAll(m, "\n", "; ")
	}
	return errors.New(strings.Join(parts, "; "))
}

// runProcesses runs the jobs as processes of this executable (iopath
// workload KIND --file PATH ... --job I/N), started together: each job
// writes a byte to fd 4 when ready, and all start when fd 3 reaches end of
// file. A job dies with this process (parent-death signal).
func (p *Prepared) runProcesses(ctx context.Context) (*Report, error) {
	n := p.Spec.NumJobs
	goR, goW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer goW.Close()
	readyR, readyW, err := os.Pipe()
	if err != nil {
		goR.Close()
		return nil, err
	}
	defer readyR.Close()
	cmds := make([]*exec.Cmd, 0, n)
	outs := make([]bytes.Buffer, n)
	errbs := make([]bytes.Buffer, n)
	killAll := func() {
		for _, c := range cmds {
			c.Process.Kill()
			c.Wait()
		}
	}
	for i := range n {
		path, argv, err := SelfCommand(p.Spec.jobArgs(p.Path, i)...)
		if err == nil {
			c := &exec.Cmd{Path: path, Args: argv, Stdout: &outs[i], Stderr: &errbs[i],
				ExtraFiles:  []*os.File{goR, readyW},
				SysProcAttr: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}}
			if err = c.Start(); err == nil {
				cmds = append(cmds, c)
			}
		}
		if err != nil {
			goR.Close()
			readyW.Close()
			killAll()
			return nil, fmt.Errorf("starting job %d of %d: %w", i, n, err)
		}
	}
	goR.Close()
	readyW.Close()
	// Ctrl-C or SIGTERM here: the jobs stop as interrupted (they check
	// their context once running), and report what they did.
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-ctx.Done():
			for _, c := range cmds {
				c.Process.Signal(os.Interrupt)
			}
		case <-done:
		}
	}()
	got := 0
	for buf := make([]byte, n); got < n; {
		k, err := readyR.Read(buf[got:])
		got += k
		if err != nil {
			break // a job exited before it was ready
		}
	}
	if got < n {
		killAll()
		if ctx.Err() != nil {
			// SIGINT/SIGTERM before every job was ready: the jobs got
			// it while they started (and may have died of it); no job
			// failed. An interrupted report with nothing done.
			return p.interruptedBeforeStart(), nil
		}
		return nil, p.jobFailure(errbs, "a job failed before the start")
	}
	goW.Close() // start
	reps := make([]*Report, n)
	states := make([]*runState, n)
	errs := make([]error, n)
	for i, c := range cmds {
		werr := c.Wait()
		r := &Report{}
		if jerr := json.Unmarshal(outs[i].Bytes(), r); jerr != nil || r.JobHists == nil {
			errs[i] = fmt.Errorf("%s", jobMessage(&errbs[i], werr))
			continue
		}
		r.Pid = c.Process.Pid
		reps[i], states[i] = r, r.JobHists.state()
		r.JobHists = nil
		if werr != nil && !r.Interrupted {
			errs[i] = errors.New(jobMessage(&errbs[i], werr))
		}
	}
	if slices.Contains(reps, nil) {
		return nil, jobsError(errs)
	}
	for i, r := range reps {
		r.hists = states[i]
	}
	return p.aggregate(reps), jobsError(errs)
}

// interruptedBeforeStart is the report of jobs stopped before they started:
// no ops, Interrupted set.
func (p *Prepared) interruptedBeforeStart() *Report {
	reps := make([]*Report, p.Spec.NumJobs)
	for i := range reps {
		st := &runState{lat: newHist(), syncLat: newHist(), stopped: true}
		reps[i] = p.report(&p.job, st, &unix.Rusage{}, &unix.Rusage{})
	}
	return p.aggregate(reps)
}

// jobMessage is what a failed job process said on stderr, or how it ended.
func jobMessage(stderr *bytes.Buffer, werr error) string {
	if msg := strings.TrimSpace(strings.TrimPrefix(stderr.String(), "iopath: ")); msg != "" {
		return msg
	}
	if werr != nil {
		return werr.Error()
	}
	return "no report"
}

// jobFailure is the error of the first job that said why it failed.
func (p *Prepared) jobFailure(errbs []bytes.Buffer, what string) error {
	for i := range errbs {
		if msg := strings.TrimSpace(errbs[i].String()); msg != "" {
			return fmt.Errorf("job %d: %s", i, strings.TrimPrefix(msg, "iopath: "))
		}
	}
	return errors.New(what)
}

// SelfCommand returns the path and argv that run this iopath executable
// with args. Under go test (IOPATH_TEST_HELPER=1) the executable is the test
// binary of cmd/iopath, which runs iopath's main behind
// TestWorkloadHelperProcess.
func SelfCommand(args ...string) (string, []string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", nil, err
	}
	argv := []string{"iopath"}
	if os.Getenv("IOPATH_TEST_HELPER") == "1" {
		argv = []string{self, "-test.run=^TestWorkloadHelperProcess$", "--"}
	}
	return self, append(argv, args...), nil
}

// jobArgs is the command line of job i of the spec, on the prepared file
// path: the spec's flags without those of preparation (the parent did it).
func (s *Spec) jobArgs(path string, i int) []string {
	a := []string{"workload", s.Kind, "--file", path, "--json", "--job", fmt.Sprintf("%d/%d", i, s.NumJobs),
		"--engine", s.Engine, "--bs", strconv.FormatInt(s.BlockSize, 10), "--size", strconv.FormatInt(s.FileSize, 10),
		"--seed", strconv.FormatUint(s.Seed, 10), "--iodepth", strconv.Itoa(s.IODepth), "--iodepth-batch", strconv.Itoa(s.IODepthBatch),
		"--iodepth-complete-min", strconv.Itoa(s.IODepthCompleteMin)}
	if s.Count > 0 {
		a = append(a, "--count", strconv.FormatInt(s.Count, 10))
	}
	if s.UringAsync {
		a = append(a, "--uring-async")
	}
	if s.SQPoll {
		a = append(a, "--sqpoll")
	}
	if s.UringFixed {
		a = append(a, "--fixed-files")
	}
	if s.UringLink > 0 {
		a = append(a, "--uring-link", strconv.Itoa(s.UringLink))
	}
	if s.Duration > 0 {
		a = append(a, "--duration", s.Duration.String())
	}
	if s.FsyncEvery > 0 {
		a = append(a, "--fsync", strconv.FormatInt(s.FsyncEvery, 10))
	}
	if s.FdatasyncEvery > 0 {
		a = append(a, "--fdatasync", strconv.FormatInt(s.FdatasyncEvery, 10))
	}
	if s.Fadvise != "" {
		a = append(a, "--fadvise", s.Fadvise)
	}
	for _, f := range []struct {
		on   bool
		flag string
	}{{s.Random, "--random"}, {s.Overwrite, "--overwrite"}, {s.Direct, "--direct"}} {
		if f.on {
			a = append(a, f.flag)
		}
	}
	return a
}

// runJobProcess runs this process's one job of a --numjobs run: ready on
// fd 4, start at end of file on fd 3, and the histograms in the report.
func (p *Prepared) runJobProcess(ctx context.Context) (*Report, error) {
	gate := func() {
		ready, start := os.NewFile(4, "ready"), os.NewFile(3, "start")
		ready.Write([]byte{1})
		ready.Close()
		var b [1]byte
		for {
			if _, err := start.Read(b[:]); err != nil {
				break
			}
		}
		start.Close()
	}
	rep, err := p.runJob(ctx, &p.job, p.Spec.job.index, gate)
	if rep != nil {
		rep.Job = p.Spec.job.index
		rep.JobHists = rep.hists.export()
	}
	return rep, err
}

// export returns the run state's histograms for a job process's report.
func (st *runState) export() *jobHists {
	h := &jobHists{Lat: st.lat.Export(), Sync: st.syncLat.Export(), Sums: st.sums}
	if st.slat != nil {
		h.Slat, h.Clat = st.slat.Export(), st.clat.Export()
	}
	return h
}

// state rebuilds the histograms a job process sent.
func (h *jobHists) state() *runState {
	imp := func(s *hdrhistogram.Snapshot) *hdrhistogram.Histogram {
		if s == nil {
			return nil
		}
		return hdrhistogram.Import(s)
	}
	st := &runState{lat: imp(h.Lat), syncLat: imp(h.Sync), slat: imp(h.Slat), clat: imp(h.Clat), sums: h.Sums}
	if st.lat == nil {
		st.lat = newHist()
	}
	if st.syncLat == nil {
		st.syncLat = newHist()
	}
	return st
}

// aggregate is fio's group report of the jobs: ops, bytes, CPU, faults and
// system calls summed, latencies of all jobs' requests together, IOPS and
// bandwidth over the longest job's runtime.
func (p *Prepared) aggregate(reps []*Report) *Report {
	first := reps[0]
	r := &Report{
		Kind: first.Kind, Engine: first.Engine, File: first.File, BlockSize: first.BlockSize,
		FileSize: first.FileSize, Base: first.Base, Random: first.Random, Seed: first.Seed,
		Direct: first.Direct, Cold: p.Spec.Cold, Fadvise: first.Fadvise, IODepth: first.IODepth,
		Batch: first.Batch, CompleteMin: first.CompleteMin, NumJobs: len(reps), Thread: p.Spec.Thread, Cache: p.Cache, Jobs: reps,
	}
	agg := &runState{lat: newHist(), syncLat: newHist()}
	kernel := &ProcIO{}
	for i, j := range reps {
		if j == nil {
			continue
		}
		j.Job = i
		st := j.hists
		r.Ops += j.Ops
		r.Bytes += j.Bytes
		r.Runtime = max(r.Runtime, j.Runtime)
		r.Interrupted = r.Interrupted || j.Interrupted
		r.CPUUser += j.CPUUser
		r.CPUSys += j.CPUSys
		r.MinorFaults += j.MinorFaults
		r.MajorFaults += j.MajorFaults
		r.MaxInflight = max(r.MaxInflight, j.MaxInflight)
		r.Syscalls = addCalls(r.Syscalls, j.Syscalls)
		if j.Kernel != nil && kernel != nil {
			kernel.add(j.Kernel)
		} else {
			kernel = nil
		}
		for _, n := range j.Notes {
			if !slices.Contains(r.Notes, n) {
				r.Notes = append(r.Notes, n)
			}
		}
		if st == nil {
			continue
		}
		agg.lat.Merge(st.lat)
		agg.syncLat.Merge(st.syncLat)
		if st.slat != nil {
			if agg.slat == nil {
				agg.slat, agg.clat = newHist(), newHist()
			}
			agg.slat.Merge(st.slat)
			agg.clat.Merge(st.clat)
			for k := range agg.sums {
				agg.sums[k] += st.sums[k]
			}
		}
	}
	r.Kernel, r.KernelScope = kernel, first.KernelScope
	r.Latency = summarize(agg.lat)
	r.finish(agg)
	return r
}

// addCalls adds the counts of b to a, by name, keeping a's order.
func addCalls(a, b []SyscallCount) []SyscallCount {
	for _, c := range b {
		i := slices.IndexFunc(a, func(x SyscallCount) bool { return x.Name == c.Name })
		if i < 0 {
			a = append(a, SyscallCount{Name: c.Name})
			i = len(a) - 1
		}
		a[i].Calls += c.Calls
		a[i].Bytes += c.Bytes
	}
	return a
}

// add adds b's counters to a.
func (a *ProcIO) add(b *ProcIO) {
	a.ReadCalls += b.ReadCalls
	a.WriteCalls += b.WriteCalls
	a.ReadChars += b.ReadChars
	a.WriteChars += b.WriteChars
	a.ReadBytes += b.ReadBytes
	a.WriteBytes += b.WriteBytes
}
