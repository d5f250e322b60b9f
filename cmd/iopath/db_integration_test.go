package main

// Privileged integration tests with real databases and cp: the stories a
// DBA reads (issue 12). Each traces only the database's processes (by pid
// or comm) and checks iopath's records against the kernel's own counters.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iopath/iopath/internal/testutil"
	"github.com/iopath/iopath/record"
)

// sqliteCommits is a python3 program: 50 commits in rollback-journal mode
// (journal_mode=DELETE, synchronous=FULL: each commit syncs the journal,
// its directory and the database).
func sqliteCommits(db string) []string {
	prog := fmt.Sprintf(`import sqlite3
c = sqlite3.connect(%q, isolation_level=None)
c.execute("PRAGMA journal_mode=DELETE")
c.execute("PRAGMA synchronous=FULL")
c.execute("CREATE TABLE IF NOT EXISTS t(k INTEGER PRIMARY KEY, v BLOB)")
for i in range(50):
    c.execute("BEGIN")
    c.execute("INSERT INTO t(v) VALUES(randomblob(3000))")
    c.execute("COMMIT")
c.close()
`, db)
	return []string{"python3", "-c", prog}
}

// Must-be-true 4: each commit's fdatasyncs on the database, the journal and
// the directory appear with their bios (the device flush among them).
func TestTraceSQLiteCommits(t *testing.T) {
	needRoot(t)
	needPython(t)
	dir := diskDir(t)
	db := filepath.Join(dir, "test.db")
	// The table exists before the trace: the 50 commits are the traced part.
	if out, err := exec.Command("python3", "-c", fmt.Sprintf(`import sqlite3
c = sqlite3.connect(%q); c.execute("CREATE TABLE t(k INTEGER PRIMARY KEY, v BLOB)"); c.commit()`, db)).CombinedOutput(); err != nil {
		t.Fatalf("sqlite3: %v %s", err, out)
	}
	tr := traceCmd(t, append([]string{"--"}, sqliteCommits(db)...)...)
	syncs := map[string]int{}
	// Every call's bios completed (seen, or inferred where the build host's
	// kernel hid the completion from BPF: completed_before_ns, see
	// docs/kernel-notes.md, "Completions BPF never sees") and its device
	// flush is there; nothing incomplete.
	var calls, noFlush int
	for _, c := range tr.calls {
		if c.Syscall != "fsync" && c.Syscall != "fdatasync" {
			continue
		}
		calls++
		syncs[c.Path]++
		if len(c.Bios) == 0 {
			t.Errorf("%s of %s: no bio", c.Syscall, c.Path)
		}
		for _, b := range c.Bios {
			if !completed(b) {
				t.Errorf("%s of %s: bio without completion %+v", c.Syscall, c.Path, b)
			}
		}
		if c.DeviceFlush != record.FlushDone && c.DeviceFlush != record.FlushNotNeeded {
			noFlush++
			t.Errorf("%s of %s: device_flush %q, bios %+v", c.Syscall, c.Path, c.DeviceFlush, c.Bios)
		}
	}
	if noFlush != 0 || tr.summary.IncompleteBios != 0 {
		t.Errorf("%d of %d fsync-family calls without their device flush; incomplete bios %d %v; completions unseen %d",
			noFlush, calls, tr.summary.IncompleteBios, tr.summary.IncompleteCauses, tr.summary.CompletionsUnseen)
	}
	t.Logf("syncs by path: %v", syncs)
	for _, p := range []string{db, db + "-journal", dir} {
		if syncs[p] < 50 {
			t.Errorf("%s: %d syncs for 50 commits", p, syncs[p])
		}
	}
}

// Must-be-true 5: cp of a 200 MiB cold file (copy_file_range asked for up
// to SSIZE_MAX bytes): the bytes requested are the bytes copied, the
// destination has its own row with its path, and its dirtied pages and
// their persisted records name it (sync DST writes them).
func TestTraceCpCopy(t *testing.T) {
	needRoot(t)
	testutil.KernelIndependent(t)
	dir := diskDir(t)
	src := coldFile(t, dir, 200<<20)
	dst := filepath.Join(dir, "copy.dat")
	needPython(t)
	// python3 runs cp, then reads the kernel's count of cp's disk reads
	// (wait4's ru_inblock of cp itself: its read_bytes / 512, as
	// /proc/PID/io had it). Not RUSAGE_CHILDREN: that also sums children
	// waited for before an exec, and python3 may be a shell shim (pyenv's
	// runs basename and readlink, whose cold binaries read 8 KiB: the test
	// failed 1 run in 8 that way, first runs after idle).
	// cp's binary and libraries are read once before, so that cp reads
	// only the source.
	warmBinary(t, "cp")
	inblock := filepath.Join(t.TempDir(), "inblock")
	tr := traceCmd(t, "--", "python3", "-c", fmt.Sprintf(`import os, subprocess
p = subprocess.Popen(["cp", %q, %q])
_, status, ru = os.wait4(p.pid, 0)
assert status == 0, status
open(%q, "w").write(str(ru.ru_inblock * 512))
subprocess.run(["sync", %q], check=True)`, src, dst, inblock, dst))
	srcIno, dstIno := inoOf(t, src), inoOf(t, dst)
	b, err := os.ReadFile(inblock)
	if err != nil {
		t.Fatal(err)
	}
	var kernelRead uint64
	fmt.Sscan(string(b), &kernelRead)
	var cpRead uint64
	cps := 0
	for _, p := range tr.summary.Pids {
		if p.Comm == "cp" {
			cpRead += p.DiskBytesRead
			cps++
		}
	}
	t.Logf("cp: iopath's disk bytes read %d, the kernel's read_bytes %d; incomplete bios %d %v", cpRead, kernelRead,
		tr.summary.IncompleteBios, tr.summary.IncompleteCauses)
	// Equal, or short by bios iopath counted as incomplete. Before
	// 2026-12-01 about 1 run in 3 here was 4-28 KiB short with nothing
	// counted; the likely path, closed since: a request requeued, then
	// ended without any BPF program seeing its block_rq_complete (the 6.18
	// host runs none on top of PID 1's threads: docs/kernel-notes.md),
	// then its address issued for cp's bios, which the engine took for the
	// requeued request's and dropped. A gap left must be counted;
	// IOPATH_STRICT_IO=1 asks for equality.
	gap := int64(kernelRead) - int64(cpRead)
	counted := tr.summary.IncompleteBios > 0
	if strict := os.Getenv("IOPATH_STRICT_IO") == "1"; cps != 1 || gap < 0 || (gap != 0 && (strict || !counted)) {
		t.Errorf("cp (%d rows): iopath's disk bytes read %d, the kernel's read_bytes (wait4 ru_inblock × 512) %d, incomplete bios %d %v: want equal%s",
			cps, cpRead, kernelRead, tr.summary.IncompleteBios, tr.summary.IncompleteCauses,
			map[bool]string{true: "", false: " or short by counted incomplete bios"}[strict])
	} else if gap != 0 {
		t.Logf("the kernel counted %d bytes of cp's reads more than iopath, which counted %d incomplete bios %v", gap,
			tr.summary.IncompleteBios, tr.summary.IncompleteCauses)
	}
	const size, pages = 200 << 20, 200 << 20 / 4096
	var srcRow, dstRow *record.FileSummary
	for i := range tr.summary.Files {
		switch f := &tr.summary.Files[i]; f.Ino {
		case srcIno:
			srcRow = f
		case dstIno:
			dstRow = f
		}
	}
	if srcRow == nil || dstRow == nil {
		t.Fatalf("rows: source %v, destination %v", srcRow, dstRow)
	}
	if srcRow.ReadBytesReq != size || srcRow.BytesRequested != size || srcRow.DirtiedPages != 0 {
		t.Errorf("source row %+v", *srcRow)
	}
	if dstRow.Path != dst || dstRow.DirtiedPages != pages {
		t.Errorf("destination row %+v", *dstRow)
	}
	var persisted uint64
	for _, p := range tr.persisted {
		if p.Ino == dstIno {
			if p.Path != dst {
				t.Errorf("persisted record without the destination's path: %+v", p)
			}
			persisted += uint64(p.Pages)
		}
	}
	// Every page persisted, or the shortfall counted: pages whose write
	// iopath did not see end (dirty_pages_pending: a request held at the
	// end, its completion unseen; dirty_pages_unseen: cachestat says the
	// file is clean). CI failed once 4096 pages short (2026-12-07), its
	// counts unknown: the end then read the disk's in-flight count once
	// (tracer/inflight.go reads it again now). IOPATH_STRICT_IO=1 asks for
	// equality.
	countedPages := tr.summary.DirtyPending + tr.summary.DirtyUnseen
	if short := int64(pages) - int64(persisted); short != 0 &&
		(short < 0 || uint64(short) > countedPages || os.Getenv("IOPATH_STRICT_IO") == "1") {
		t.Errorf("persisted pages of the destination: %d, want %d (or short by counted pages); %s", persisted, pages, tr.lossCounts())
	} else if short != 0 {
		t.Logf("persisted pages of the destination: %d of %d, the rest counted; %s", persisted, pages, tr.lossCounts())
	}
	for _, c := range tr.calls {
		if c.Syscall == "copy_file_range" && c.ReturnedBytes > 0 && c.OutPath != dst {
			t.Errorf("copy record names output %q, want %s", c.OutPath, dst)
		}
	}
}

// postgresBin finds PostgreSQL's server binaries (Debian installs them in
// /usr/lib/postgresql/N/bin), installing the Debian package if missing.
func postgresBin(t *testing.T) string {
	t.Helper()
	find := func() string {
		m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
		if len(m) > 0 {
			return filepath.Dir(m[len(m)-1])
		}
		if p, err := exec.LookPath("initdb"); err == nil {
			return filepath.Dir(p)
		}
		return ""
	}
	if bin := find(); bin != "" {
		return bin
	}
	if out, err := exec.Command("sh", "-c", "apt-get install -y -qq --no-install-recommends postgresql postgresql-contrib").CombinedOutput(); err != nil {
		t.Skipf("PostgreSQL is not installed and apt-get failed: %v %s", err, out)
	}
	if bin := find(); bin != "" {
		return bin
	}
	t.Skip("PostgreSQL is not installed")
	return ""
}

// pgCluster is a PostgreSQL cluster of the test's own, in diskDir, that
// listens on a Unix socket only; stopped at the end of the test.
type pgCluster struct {
	bin, pgbench string // server binaries' directory, pgbench
	dir          string // the test's disk directory (cluster inside)
	data, sock   string
}

// startPgCluster installs PostgreSQL if needed, creates and starts a
// cluster (autovacuum off: no background reader wakes between the kernel's
// read_bytes snapshots and the traced window's ends, pgbench -i vacuums),
// loads pgbench's tables (scale 10, 160 MB) and finishes the spread
// checkpoint pgbench -i's WAL started, whose paced writes
// (read-before-write once the caches are dropped) would otherwise read
// during the traced window.
func startPgCluster(t *testing.T) *pgCluster {
	t.Helper()
	bin := postgresBin(t)
	pgbench, err := exec.LookPath("pgbench")
	if err != nil {
		if _, e := os.Stat(filepath.Join(bin, "pgbench")); e != nil {
			t.Skip("needs pgbench")
		}
		pgbench = filepath.Join(bin, "pgbench")
	}
	dir := diskDir(t)
	os.Chmod(dir, 0o755)
	pg := &pgCluster{bin: bin, pgbench: pgbench, dir: dir, data: filepath.Join(dir, "pg"),
		sock: filepath.Join(dir, "sock")} // postgres must create its socket there
	os.Mkdir(pg.data, 0o700)
	os.Mkdir(pg.sock, 0o755)
	pg.run(t, exec.Command("chown", "postgres:postgres", pg.data, pg.sock))
	pg.run(t, pg.asPg("initdb", "-D", pg.data, "-A", "trust", "-U", "postgres"))
	pg.run(t, pg.asPg("pg_ctl", "-D", pg.data, "-w", "-l", filepath.Join(pg.data, "log"), "-o",
		fmt.Sprintf("-k %s -c listen_addresses='' -c max_wal_size=64MB -c min_wal_size=32MB -c autovacuum=off", pg.sock), "start"))
	t.Cleanup(func() { pg.asPg("pg_ctl", "-D", pg.data, "-m", "fast", "-w", "stop").Run() })
	pg.run(t, pg.asPg("pgbench", "-i", "-s", "10", "-q", "postgres"))
	pg.run(t, pg.asPg("psql", "-c", "CHECKPOINT", "postgres"))
	return pg
}

// asPg is a command of the cluster run as user postgres: name is a server
// binary (initdb, pg_ctl), or a client (psql, pgbench) given the cluster's
// socket and user.
func (pg *pgCluster) asPg(name string, args ...string) *exec.Cmd {
	path := filepath.Join(pg.bin, name)
	switch name {
	case "pgbench":
		path = pg.pgbench
		fallthrough
	case "psql":
		args = append([]string{"-h", pg.sock, "-U", "postgres"}, args...)
	}
	c := exec.Command("runuser", append([]string{"-u", "postgres", "--", path}, args...)...)
	c.Dir = "/"
	return c
}

// run runs c, failing the test with its output if it fails.
func (pg *pgCluster) run(t *testing.T, c *exec.Cmd) {
	t.Helper()
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("%v: %v\n%s", c.Args, err, out)
	}
}

// Must-be-true 3: pgbench -c 4 -T 20 under --comm postgres.
func TestTracePgbench(t *testing.T) {
	needRoot(t)
	pg := startPgCluster(t)
	dir, data := pg.dir, pg.data
	run := func(c *exec.Cmd) { t.Helper(); pg.run(t, c) }

	// Trace while pgbench runs, then a checkpoint (its directory fsyncs).
	ready := filepath.Join(dir, "ready")
	// The joins are checked only if no record was lost. pgbench -c 4
	// streams ~11 MB/s of records (236 MB, 844 k records in 21 s,
	// measured 2026-12-07): the default 8 MiB ring holds 0.75 s of them,
	// and CI's run lost some (a fsync without its flush, 3 bios never
	// issued, 5 bios of lost calls: the signature a 256 KiB ring gives
	// here, with lost_events 3360). 64 MiB holds 6 s.
	trace := iopathCmd(os.TempDir(), "trace", "--json", "--comm", "postgres", "--ready-file", ready,
		"--ringbuf-size", strconv.Itoa(pgbenchRing))
	if rb := os.Getenv("IOPATH_TEST_PGBENCH_RING"); rb != "" {
		// To see what loss does to the joins: a small ring.
		trace.Args[len(trace.Args)-1] = rb
	}
	var out, errb strings.Builder
	trace.Stdout, trace.Stderr = &out, &errb
	if err := trace.Start(); err != nil {
		t.Fatal(err)
	}
	waitFile(t, ready)
	// Cold tables, so that the backends read from the disk (the cluster's
	// files only: no global drop_caches, which would slow every other
	// process on the machine); the kernel's read_bytes of the postmaster
	// and its children before and after.
	testutil.EvictTree(t, data)
	postmaster := postmasterPid(t, data)
	// --comm postgres also traces other clusters on the machine (another
	// session's): note their processes while the trace runs, to leave
	// them out of the read_bytes equality.
	foreign := map[uint32]bool{}
	sampled, stopSampling := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			foreignPostgres(postmaster, foreign)
			select {
			case <-stopSampling:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	read0, background := clusterReadBytes(t, postmaster, 0)
	t0 := monotonicNs()
	run(pg.asPg("pgbench", "-c", "4", "-T", "20", "postgres"))
	run(pg.asPg("psql", "-c", "CHECKPOINT", "postgres"))
	t1 := monotonicNs()
	read1, _ := clusterReadBytes(t, postmaster, background)
	close(stopSampling)
	<-sampled
	trace.Process.Signal(os.Interrupt)
	trace.Wait()
	t.Logf("iopath: %s user, %s system CPU in %s", trace.ProcessState.UserTime().Round(time.Millisecond),
		trace.ProcessState.SystemTime().Round(time.Millisecond), time.Duration(t1-t0).Round(time.Millisecond))
	if d := os.Getenv("IOPATH_TEST_DUMP"); d != "" {
		os.WriteFile(filepath.Join(d, t.Name()+".jsonl"), []byte(out.String()), 0o644)
	}
	tr := parseRecords(t, []byte(out.String()))
	if tr.summary == nil {
		t.Fatalf("no summary; stderr:\n%s", errb.String())
	}
	var syncs, flushed, dirSyncs int
	for _, c := range tr.calls {
		if c.Comm != "postgres" || (c.Syscall != "fsync" && c.Syscall != "fdatasync") {
			continue
		}
		syncs++
		if c.DeviceFlush == record.FlushDone {
			flushed++
		}
		if st, err := os.Stat(c.Path); err == nil && st.IsDir() {
			dirSyncs++
		}
	}
	t.Logf("postgres: %d fsync-family calls, %d with a device flush, %d of directories; incomplete bios %d %v; completions unseen %d; unattributed %d bios %d bytes %v",
		syncs, flushed, dirSyncs, tr.summary.IncompleteBios, tr.summary.IncompleteCauses, tr.summary.CompletionsUnseen, tr.summary.UnattributedBios, tr.summary.UnattributedBytes, tr.summary.UnattributedCauses)
	// What the kernel did not deliver, to tell a failure's cause (lost
	// records, skipped programs, full maps) from a join's error.
	t.Logf("lost_events %d; missed_runs %v; map_evictions %v; truncations %v; diagnostics %v",
		tr.summary.LostEvents, nonZero(tr.summary.MissedRuns), nonZero(tr.summary.MapEvictions),
		nonZero(tr.summary.Truncations), nonZero(tr.summary.Diagnostics))
	if tr.summary.LostEvents != 0 {
		t.Fatalf("%d records lost (ring buffer full: iopath's reader fell %d MiB behind): the joins cannot be checked", tr.summary.LostEvents, pgbenchRing>>20)
	}
	if c := tr.summary.IncompleteCauses; c["never_issued"]+c["no_completion"] != tr.summary.IncompleteBios {
		t.Errorf("incomplete causes %v do not add up to incomplete_bios %d", c, tr.summary.IncompleteBios)
	}
	// Nothing incomplete, every fsync-family call with its device flush:
	// where the build host's kernel hid a completion from BPF
	// (docs/kernel-notes.md, "Completions BPF never sees") it is inferred
	// (completions_unseen; measured 4-187 per run on 2026-12-01, with 0
	// incomplete and all flushes in 4 of 4 runs).
	if ev := tr.summary.MapEvictions["pending_calls"]; ev != 0 {
		t.Errorf("pending_calls evictions %d", ev)
	}
	if inc := tr.summary.IncompleteBios; inc != 0 {
		t.Errorf("incomplete bios %d for %d fsync-family calls", inc, syncs)
	}
	if syncs == 0 || flushed != syncs {
		t.Errorf("%d of %d fsync-family calls have their device flush", flushed, syncs)
	}
	if dirSyncs == 0 {
		t.Errorf("no directory fsync seen")
	}
	// Attributed disk reads of the cluster's processes = the kernel's
	// read_bytes over the run (exited backends through the postmaster,
	// which reaped them).
	var traced, others uint64
	for _, p := range tr.summary.Pids {
		switch {
		case p.Comm != "postgres":
		case foreign[p.Pid]:
			others += p.DiskBytesRead
		default:
			traced += p.DiskBytesRead
		}
	}
	if others != 0 {
		t.Logf("left out: %d bytes read by %d processes of other PostgreSQL clusters", others, len(foreign))
	}
	t.Logf("postgres: disk bytes read: iopath %d, the kernel's read_bytes %d", traced, read1-read0)
	if traced != read1-read0 {
		t.Errorf("postgres processes: iopath's disk bytes read %d, the kernel's read_bytes %d: want equal", traced, read1-read0)
		for _, c := range tr.calls {
			for _, b := range c.Bios {
				if c.Comm == "postgres" && strings.HasPrefix(b.Rwbs, "R") && (b.QueueNs < t0 || b.QueueNs > t1) {
					t.Logf("read bio outside the kernel's snapshots [%d, %d]: %+v of %s pid %d %s", t0, t1, b, c.Syscall, c.Pid, c.Path)
				}
			}
		}
	}
	for _, f := range tr.summary.Files {
		if strings.Contains(filepath.Base(f.Path), "xlogtemp.") {
			if _, err := os.Stat(f.Path); err != nil {
				t.Errorf("row named by a renamed segment's temporary name: %+v", f)
			}
		}
	}
}

// monotonicNs is CLOCK_MONOTONIC, the clock of records' times.
func monotonicNs() uint64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return uint64(ts.Nano())
}

// foreignPostgres adds to foreign the running postgres processes that are
// neither the postmaster nor its children: other clusters'.
func foreignPostgres(postmaster int, foreign map[uint32]bool) {
	for _, p := range procStats() {
		if p.comm == "postgres" && p.pid != postmaster && p.ppid != postmaster {
			foreign[uint32(p.pid)] = true
		}
	}
}

// procStat is what /proc/PID/stat says of a process.
type procStat struct {
	pid, ppid int
	comm      string
	state     string
}

// procStats reads /proc/PID/stat of every process (comm may hold spaces
// and parentheses: split at the last ')').
func procStats() []procStat {
	var out []procStat
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		open, close := strings.IndexByte(string(st), '('), strings.LastIndexByte(string(st), ')')
		if open < 0 || close < open {
			continue
		}
		f := strings.Fields(string(st[close+1:]))
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		out = append(out, procStat{pid: pid, ppid: ppid, comm: string(st[open+1 : close]), state: f[0]})
	}
	return out
}

// postmasterPid is the pid in the data directory's postmaster.pid.
func postmasterPid(t *testing.T, data string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(data, "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	if err != nil {
		t.Fatalf("postmaster.pid: %v", err)
	}
	return pid
}

// clusterReadBytes sums read_bytes of /proc/PID/io over the postmaster and
// its children: the postmaster's count holds the children it reaped
// (kernel/exit.c, wait_task_zombie adds the child's task_io_accounting to
// its parent's signal struct). It first waits (up to 5 s) until the
// postmaster has exactly its background children (settle of them; 0: any
// number) and no zombie, so that no backend is half-way through exiting and
// counted in both or neither. It returns the sum and the children counted.
func clusterReadBytes(t *testing.T, postmaster, settle int) (uint64, int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		children, zombie := postmasterChildren(postmaster)
		if (zombie || (settle != 0 && len(children) != settle)) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		var sum uint64
		for _, pid := range append(children, postmaster) {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
			if err != nil {
				t.Fatalf("a postgres process changed while the cluster was idle: %v", err)
			}
			for line := range strings.Lines(string(b)) {
				if v, ok := strings.CutPrefix(line, "read_bytes: "); ok {
					n, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
					sum += n
				}
			}
		}
		return sum, len(children)
	}
}

// postmasterChildren lists the postmaster's child processes and whether one
// is a zombie.
func postmasterChildren(postmaster int) (pids []int, zombie bool) {
	for _, p := range procStats() {
		if p.ppid == postmaster && p.pid != postmaster {
			zombie = zombie || p.state == "Z"
			pids = append(pids, p.pid)
		}
	}
	return pids, zombie
}

// pgbenchRing is TestTracePgbench's --ringbuf-size, in bytes.
const pgbenchRing = 64 << 20

// nonZero is m without its zero values (a summary's counter maps list
// every counter).
func nonZero(m map[string]uint64) map[string]uint64 {
	out := map[string]uint64{}
	for k, v := range m {
		if v != 0 {
			out[k] = v
		}
	}
	return out
}
