package main

// Integration tests of `iopath serve`: bad addresses (no root needed), and,
// as root, a real Prometheus server (Debian's prometheus package, started
// here on loopback with its own config and data directory) scraping iopath
// while a cold random-read workload runs.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/iopath/iopath/internal/testutil"
	"github.com/iopath/iopath/workloads"
	"golang.org/x/sys/unix"
)

func TestServeBadListen(t *testing.T) {
	tmp := t.TempDir()
	checkRefused(t, tmp, "--listen nonsense: address nonsense: missing port in address", "serve", "--listen", "nonsense")
	checkRefused(t, tmp, "invalid port", "serve", "--listen", "127.0.0.1:99999")
	// A port that is not a number names the port, not the host.
	checkRefused(t, tmp, `--listen :abc: port "abc" is not a number: give HOST:PORT with a port of 0 to 65535, e.g. --listen :9465`, "serve", "--listen", ":abc")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	checkRefused(t, tmp, "address already in use: the port is in use: give a free port", "serve", "--listen", ln.Addr().String())
	checkRefused(t, tmp, "999.1.1.1: no such host: the host is neither an IP address nor a known name", "serve", "--listen", "999.1.1.1:80")
	checkRefused(t, tmp, "--per-comm", "serve", "--per-comm", "a-command-name-longer-than-15")
}

// startServe starts `iopath serve` on a free loopback port and returns its
// address once it serves.
func startServe(t *testing.T, tmp string, args ...string) (*exec.Cmd, string, *strings.Builder) {
	t.Helper()
	cmd := iopathCmd(tmp, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	var log strings.Builder
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			log.WriteString(line + "\n")
			if a, ok := strings.CutPrefix(line, "iopath: serving metrics on http://"); ok {
				addr <- strings.TrimSuffix(a, "/metrics")
			}
		}
		close(addr)
	}()
	select {
	case a, ok := <-addr:
		if !ok {
			cmd.Wait()
			t.Fatalf("iopath serve ended before serving:\n%s", log.String())
		}
		return cmd, a, &log
	case <-time.After(60 * time.Second):
		t.Fatalf("iopath serve did not serve within 60 s:\n%s", log.String())
	}
	return nil, "", nil
}

// startPrometheus runs the prometheus binary on loopback with a config
// scraping target every second, its data in a temporary directory.
func startPrometheus(t *testing.T, target string) string {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("no prometheus binary: apt-get install -y prometheus (scripts/setup.sh does)")
	}
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	web := ln.Addr().String()
	ln.Close()
	cfg := filepath.Join(dir, "prometheus.yml")
	conf := fmt.Sprintf("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: iopath\n    static_configs:\n      - targets: ['%s']\n", target)
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+web)
	logf, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		logf.Close()
	})
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if resp, err := http.Get("http://" + web + "/-/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return web
			}
		}
	}
	b, _ := os.ReadFile(logf.Name())
	t.Fatalf("prometheus not ready after 30 s:\n%s", b)
	return ""
}

// promQuery returns the value of an instant PromQL query with one result
// (ok false without a result).
func promQuery(t *testing.T, web, q string) (float64, bool) {
	t.Helper()
	resp, err := http.Get("http://" + web + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var r struct {
		Status string
		Data   struct {
			Result []struct {
				Metric map[string]string
				Value  [2]any
			}
		}
	}
	if err := json.Unmarshal(b, &r); err != nil || r.Status != "success" {
		t.Fatalf("query %s: %v %s", q, err, b)
	}
	if len(r.Data.Result) == 0 {
		return 0, false
	}
	if len(r.Data.Result) > 1 {
		t.Fatalf("query %s: %d series, want 1: %s", q, len(r.Data.Result), b)
	}
	s, _ := r.Data.Result[0].Value[1].(string)
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("query %s: value %q", q, s)
	}
	return v, true
}

// waitQuery polls q until ok(value) or 20 s passed; it returns the last value.
func waitQuery(t *testing.T, web, q string, ok func(float64) bool) float64 {
	t.Helper()
	var v float64
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		var found bool
		if v, found = promQuery(t, web, q); found && ok(v) {
			return v
		}
	}
	return v
}

// TestServePrometheus: Prometheus scrapes iopath serve during a cold
// random-read workload; its HTTP API returns the workload's calls and
// disk bytes (within one readahead window of what the kernel says the
// workload read), the disk's requests and latency histograms; SIGTERM
// then stops iopath with status 0 and no BPF program of it left.
func TestServePrometheus(t *testing.T) {
	needRoot(t)
	// Host only: the Prometheus side does not depend on the kernel, and the
	// aggregates it reads are checked on every kernel by TestTopWorkloadRandReadCold;
	// in the 5.10 VM serve was not ready within 60 s under TCG.
	testutil.KernelIndependent(t)
	tmp := diskDir(t)
	// The workload runs under a command name of its own: other tests'
	// binaries (iopath.test) may run meanwhile.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	comm := fmt.Sprintf("iopwl%d", os.Getpid()%100000)
	wl := filepath.Join(t.TempDir(), comm)
	if err := os.Link(self, wl); err != nil {
		b, rerr := os.ReadFile(self)
		if rerr != nil || os.WriteFile(wl, b, 0o755) != nil {
			t.Fatalf("copying the test binary: %v", err)
		}
	}
	before := progNames(t)
	serve, addr, serveLog := startServe(t, tmp, "--per-comm", comm)
	web := startPrometheus(t, addr)
	if resp, err := http.Get("http://" + addr + "/healthz"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("/healthz: %v %v", resp, err)
	}
	// At least one scrape before the workload: its counters start at 0.
	waitQuery(t, web, `up{job="iopath"}`, func(v float64) bool { return v == 1 })
	// Every attached program has its missed-runs counter from the first
	// scrape, at 0 while it missed none (it was absent until a miss).
	if v, ok := promQuery(t, web, `count(iopath_missed_runs_total)`); !ok || v < 10 {
		t.Errorf("%v iopath_missed_runs_total series before the workload, want one per attached program", v)
	} else {
		t.Logf("%v iopath_missed_runs_total series before the workload", v)
	}

	cmd := exec.Command(wl, "-test.run=^TestWorkloadHelperProcess$", "--", "workload", "rand-read", "--cold", "--size", "32m",
		"--count", "2000", "--dir", tmp, "--json")
	cmd.Env = append(os.Environ(), "IOPATH_TEST_HELPER=1", "TMPDIR="+tmp)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("workload: %v\n%s", err, out)
	}
	rep := &workloads.Report{}
	if err := json.Unmarshal(out[strings.IndexByte(string(out), '{'):], rep); err != nil || rep.Kernel == nil {
		t.Fatalf("workload report: %v\n%s", err, out)
	}
	reads := waitQuery(t, web, fmt.Sprintf(`iopath_process_syscalls_total{comm=%q,op="read"}`, comm),
		func(v float64) bool { return v >= float64(rep.Ops) })
	if reads < float64(rep.Ops) || reads > 1.05*float64(rep.Ops) {
		t.Errorf("process_syscalls_total read %v; the workload made %d reads (+5 %% for its start)", reads, rep.Ops)
	}
	// Within one readahead window (the bound), and 5 %: this
	// machine's read_ahead_kb is 8 MiB, as large as the whole read.
	raBytes := min(readaheadBytes(t, tmp), 0.05*float64(rep.Kernel.ReadBytes))
	want := float64(rep.Kernel.ReadBytes)
	disk := waitQuery(t, web, fmt.Sprintf(`iopath_process_disk_bytes_total{comm=%q,op="read"}`, comm),
		func(v float64) bool { return math.Abs(v-want) <= raBytes })
	if math.Abs(disk-want) > raBytes {
		t.Errorf("process_disk_bytes_total read %v; the kernel's read_bytes %v (allowed: one readahead window and 5 %%, %v bytes)", disk, want, raBytes)
	}
	t.Logf("Prometheus: %v reads, %v disk bytes read; the workload: %d reads, the kernel's read_bytes %v (window %v)", reads, disk, rep.Ops, want, raBytes)
	if v, ok := promQuery(t, web, `sum(iopath_disk_bytes_total{op="read"})`); !ok || v < want {
		t.Errorf("disk_bytes_total read %v, fewer than the workload's %v", v, want)
	}
	if v, ok := promQuery(t, web, `sum(iopath_bio_latency_seconds_count{op="read",stage="d2c"})`); !ok || v == 0 {
		t.Errorf("no read request in bio_latency_seconds (%v)", v)
	}
	if v, ok := promQuery(t, web, `histogram_quantile(0.5, sum by (le) (rate(iopath_bio_latency_seconds_bucket{op="read",stage="d2c"}[1m])))`); !ok || v <= 0 || v > 1 {
		t.Errorf("D2C p50 %v s", v)
	}
	if v, ok := promQuery(t, web, `iopath_syscall_duration_seconds_count{op="read",cache="miss"}`); !ok || v < float64(rep.Ops)/2 {
		t.Errorf("syscall_duration_seconds read/miss count %v for %d cold reads", v, rep.Ops)
	}
	if v, ok := promQuery(t, web, `iopath_page_cache_accesses_total{result="miss"}`); !ok || v*4096 < want*0.5 {
		t.Errorf("page_cache_accesses_total miss %v", v)
	}
	if v, ok := promQuery(t, web, `sum(iopath_lost_events_total)`); !ok || v != 0 {
		t.Errorf("lost_events_total %v", v)
	}

	// SIGTERM: exit 143, every BPF program unloaded.
	serve.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- serve.Wait() }()
	select {
	case err := <-done:
		if code := exitStatus(err); code != 143 {
			t.Errorf("iopath serve after SIGTERM: exit status %d (%v), want 143\n%s", code, err, serveLog.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("iopath serve still running 15 s after SIGTERM")
	}
	if !strings.Contains(serveLog.String(), "stopping the server") {
		t.Errorf("stderr: %s", serveLog.String())
	}
	if left := leftBehind(t, before); len(left) != 0 {
		t.Errorf("BPF programs left behind:\n%s", strings.Join(left, "\n"))
	}
}

// readaheadBytes is the readahead window of dir's disk (read_ahead_kb).
func readaheadBytes(t *testing.T, dir string) float64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		t.Fatal(err)
	}
	maj, min := unix.Major(st.Dev), unix.Minor(st.Dev)
	b, err := os.ReadFile(fmt.Sprintf("/sys/dev/block/%d:%d/queue/read_ahead_kb", maj, min))
	if err != nil {
		b, err = os.ReadFile(fmt.Sprintf("/sys/dev/block/%d:%d/../queue/read_ahead_kb", maj, min))
	}
	kb, perr := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || perr != nil {
		return 128 << 10 // the kernel's default (VM_READAHEAD_PAGES)
	}
	return float64(kb) * 1024
}
