package tracer

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/rlimit"
	"github.com/iopath/iopath/internal/testutil"
	"golang.org/x/sys/unix"
)

const testKey = "boot b1\nbinary x/y\nkernel 6.1\nmodules ext4\ntracefs /sys/kernel/tracing\n"

func savedCache(t *testing.T, dir, key string, verdicts map[string]error) {
	t.Helper()
	pc := loadProbeCache(dir, key)
	for k, v := range verdicts {
		pc.store(k, v)
	}
	if err := pc.save(); err != nil {
		t.Fatal(err)
	}
}

func wantVerdict(t *testing.T, pc *probeCache, key string, found bool, verdict string) {
	t.Helper()
	ok, err := pc.lookup(key)
	got := ""
	if err != nil {
		got = err.Error()
	}
	if ok != found || got != verdict {
		t.Errorf("lookup(%q) = %v, %q; want %v, %q", key, ok, got, found, verdict)
	}
}

func TestProbeCacheRoundTrip(t *testing.T) {
	dir := t.TempDir()
	savedCache(t, dir, testKey, map[string]error{
		"fentry:vfs_read:": nil,
		"kprobe:vfs_read:": errors.New("kprobes unavailable"),
	})
	pc := loadProbeCache(dir, testKey)
	wantVerdict(t, pc, "fentry:vfs_read:", true, "")
	wantVerdict(t, pc, "kprobe:vfs_read:", true, "kprobes unavailable")
	wantVerdict(t, pc, "tp_btf:block_rq_issue:", false, "")
	if pc.hits != 2 {
		t.Errorf("hits = %d, want 2", pc.hits)
	}
	fi, err := os.Stat(pc.path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("cache file mode %v, want 0600", fi.Mode().Perm())
	}
}

// A different boot, binary, kernel, module set or tracefs mount is another
// key: the verdicts of the old one are never used, even when the old file
// sits where the new key's file should be.
func TestProbeCacheStaleKey(t *testing.T) {
	dir := t.TempDir()
	savedCache(t, dir, testKey, map[string]error{"fentry:vfs_read:": nil})
	for _, change := range [][2]string{
		{"boot b1", "boot b2"},
		{"binary x/y", "binary x/z"},
		{"kernel 6.1", "kernel 6.12"},
		{"modules ext4", "modules dm_mod ext4"},
		{"tracefs /sys/kernel/tracing", "tracefs "},
	} {
		key := strings.Replace(testKey, change[0], change[1], 1)
		if key == testKey {
			t.Fatalf("bad test: %q not in the key", change[0])
		}
		pc := loadProbeCache(dir, key)
		wantVerdict(t, pc, "fentry:vfs_read:", false, "")
		// the old key's file renamed to the new key's name: refused by its key
		old := loadProbeCache(dir, testKey)
		data, err := os.ReadFile(old.path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(pc.path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		wantVerdict(t, loadProbeCache(dir, key), "fentry:vfs_read:", false, "")
	}
}

func TestProbeCacheKeyOfThisProcess(t *testing.T) {
	key, err := probeCacheKey("/sys/kernel/tracing")
	if err != nil {
		t.Fatal(err)
	}
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"boot " + strings.TrimSpace(string(boot)) + "\n", "\nbinary ", "\nkernel ", "\nmodules ", "\ntracefs /sys/kernel/tracing\n"} {
		if !strings.Contains(key, want) {
			t.Errorf("key lacks %q:\n%s", want, key)
		}
	}
	other, err := probeCacheKey("")
	if err != nil {
		t.Fatal(err)
	}
	if other == key {
		t.Error("the tracefs mount does not change the key")
	}
	exe, _ := os.Executable()
	id, err := goBuildID(exe)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(id, "/") {
		t.Errorf("build ID %q: want actionID/contentID", id)
	}
	if _, err := goBuildID("/proc/self/status"); err == nil {
		t.Error("goBuildID of a text file: no error")
	}
}

// Verdicts that depend on the moment (memory, a busy lock, a signal) are
// probed again by the next run.
func TestProbeCacheSkipsTransient(t *testing.T) {
	dir := t.TempDir()
	savedCache(t, dir, testKey, map[string]error{
		"fentry:a:":     fmt.Errorf("fentry/fexit a attach: %w", unix.ENOMEM),
		"fentry:b:":     fmt.Errorf("fentry/fexit b: load program: %w", unix.EAGAIN),
		"kprobe:c:":     fmt.Errorf("kprobe c: %w", unix.EBUSY),
		"fentry:f:":     fmt.Errorf("fentry/fexit f attach: %w", unix.E2BIG), // the trampoline full of other tools' programs
		"helper:FnX":    errors.New("needs helper X: probe inconclusive: boom"),
		"tp_btf:d:":     errors.New("no BTF tracepoint d on this kernel"),
		"fentry:e:rq,*": nil,
	})
	pc := loadProbeCache(dir, testKey)
	for _, k := range []string{"fentry:a:", "fentry:b:", "kprobe:c:", "fentry:f:", "helper:FnX"} {
		wantVerdict(t, pc, k, false, "")
	}
	wantVerdict(t, pc, "tp_btf:d:", true, "no BTF tracepoint d on this kernel")
	wantVerdict(t, pc, "fentry:e:rq,*", true, "")
}

func TestProbeCacheCorruptOrForeign(t *testing.T) {
	dir := t.TempDir()
	pc := loadProbeCache(dir, testKey)
	for _, bad := range []string{"", "{", `{"version":1}`, `{"version":99,"key":` + fmt.Sprintf("%q", testKey) + `,"verdicts":{"k":""}}`} {
		if err := os.WriteFile(pc.path, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		wantVerdict(t, loadProbeCache(dir, testKey), "k", false, "")
	}
	// a corrupt file is replaced by the next save
	savedCache(t, dir, testKey, map[string]error{"k": nil})
	wantVerdict(t, loadProbeCache(dir, testKey), "k", true, "")

	// writable by others: ignored
	if err := os.Chmod(pc.path, 0o666); err != nil {
		t.Fatal(err)
	}
	wantVerdict(t, loadProbeCache(dir, testKey), "k", false, "")
	if err := os.Chmod(pc.path, 0o600); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		// another owner: ignored
		if err := os.Chown(pc.path, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		wantVerdict(t, loadProbeCache(dir, testKey), "k", false, "")
	}
}

// Two processes that probed different hooks both keep their verdicts: a
// save merges what the other wrote since the load.
func TestProbeCacheMerge(t *testing.T) {
	dir := t.TempDir()
	a, b := loadProbeCache(dir, testKey), loadProbeCache(dir, testKey)
	a.store("a", nil)
	b.store("b", errors.New("refused"))
	if err := a.save(); err != nil {
		t.Fatal(err)
	}
	if err := b.save(); err != nil {
		t.Fatal(err)
	}
	pc := loadProbeCache(dir, testKey)
	wantVerdict(t, pc, "a", true, "")
	wantVerdict(t, pc, "b", true, "refused")
}

// Saves racing with loads: a reader sees a whole file (old or new), never
// a part, and no temporary file is left.
func TestProbeCacheRace(t *testing.T) {
	dir := t.TempDir()
	path := loadProbeCache(dir, testKey).path
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				pc := loadProbeCache(dir, testKey)
				pc.store(fmt.Sprintf("w%d-%d", w, i), nil)
				if err := pc.save(); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 200 {
			data, err := os.ReadFile(path)
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			var cf probeCacheFile
			if err == nil {
				err = json.Unmarshal(data, &cf)
			}
			if err != nil {
				errs <- fmt.Errorf("reader saw a partial file: %w", err)
				return
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".probe-*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
	// each writer's last verdict survives: it merged everyone's before it
	pc := loadProbeCache(dir, testKey)
	for w := range 8 {
		wantVerdict(t, pc, fmt.Sprintf("w%d-19", w), true, "")
	}
}

func TestProbeCacheEnv(t *testing.T) {
	t.Setenv("IOPATH_PROBE_CACHE", "off")
	pc := openProbeCache("/sys/kernel/tracing")
	if pc != nil {
		t.Fatalf("IOPATH_PROBE_CACHE=off: cache %s opened", pc.path)
	}
	// a nil cache is a working no-op
	pc.store("k", nil)
	if ok, _ := pc.lookup("k"); ok {
		t.Error("nil cache found a verdict")
	}
	if err := pc.save(); err != nil {
		t.Error(err)
	}
	dir := t.TempDir()
	t.Setenv("IOPATH_PROBE_CACHE", dir)
	pc = openProbeCache("/sys/kernel/tracing")
	if pc == nil || filepath.Dir(pc.path) != dir {
		t.Fatalf("IOPATH_PROBE_CACHE=%s: cache %+v", dir, pc)
	}
}

// On the running kernel (and each VM kernel): the hooks chosen from cached
// verdicts are the ones chosen by probing, and a cached run probes nothing.
func TestProbeCacheSameChoice(t *testing.T) {
	testutil.NeedRoot(t)
	if err := rlimit.RemoveMemlock(); err != nil {
		t.Fatal(err)
	}
	t.Setenv("IOPATH_PROBE_CACHE", t.TempDir())
	choose := func() ([]HookStatus, *probeCache) {
		pr, err := newProber(btf.NewCache())
		if err != nil {
			t.Fatal(err)
		}
		if pr.disk == nil {
			t.Fatal("no probe cache")
		}
		st, _ := pr.choose(Hooks(), nil)
		return st, pr.disk
	}
	fresh, c1 := choose()
	if c1.hits != 0 {
		t.Fatalf("first run: %d verdicts from an empty cache", c1.hits)
	}
	cached, c2 := choose()
	if c2.hits == 0 || c2.added != 0 {
		t.Errorf("second run: %d verdicts reused, %d probed; want all reused", c2.hits, c2.added)
	}
	if !reflect.DeepEqual(fresh, cached) {
		t.Errorf("cached choice differs:\nfresh  %+v\ncached %+v", fresh, cached)
	}
	t.Setenv("IOPATH_PROBE_CACHE", "off")
	pr, err := newProber(btf.NewCache())
	if err != nil {
		t.Fatal(err)
	}
	if off, _ := pr.choose(Hooks(), nil); !reflect.DeepEqual(fresh, off) {
		t.Errorf("choice with the cache off differs:\nwith %+v\noff  %+v", fresh, off)
	}
}

// A load or attach failure after reused verdicts removes the file (the
// next run probes afresh) and says so; without reused verdicts the error
// is left alone and the file stays.
func TestProbeCacheSuspect(t *testing.T) {
	dir := t.TempDir()
	savedCache(t, dir, testKey, map[string]error{"fentry:vfs_read:": nil})
	fail := errors.New("attaching vfs_read (fentry vfs_read): permission denied")

	fresh := loadProbeCache(dir, testKey) // nothing looked up: hits 0
	if err := fresh.suspect(fail); err == nil || err.Error() != fail.Error() {
		t.Errorf("no reused verdicts: error changed to %v", err)
	}
	if _, err := os.Stat(fresh.path); err != nil {
		t.Errorf("no reused verdicts: file gone: %v", err)
	}

	used := loadProbeCache(dir, testKey)
	wantVerdict(t, used, "fentry:vfs_read:", true, "")
	err := used.suspect(fail)
	if !errors.Is(err, fail) || !strings.Contains(err.Error(), "probe cache: removed it") {
		t.Errorf("reused verdicts: error %v", err)
	}
	if _, err := os.Stat(used.path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("reused verdicts: file still there (%v)", err)
	}
	wantVerdict(t, loadProbeCache(dir, testKey), "fentry:vfs_read:", false, "")
	var nilCache *probeCache
	if err := nilCache.suspect(fail); err == nil || err.Error() != fail.Error() {
		t.Errorf("nil cache: %v", err)
	}
}

// issue 10: /run/iopath kept ~140 files of binaries long gone. Saving
// removes the files of other boots and of binaries gone or rebuilt, those
// unused for a day, and keeps at most maxProbeCaches (the newest).
func TestProbeCachePrune(t *testing.T) {
	dir := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	id, err := goBuildID(exe)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	write := func(name, boot, binary, exe string, age time.Duration) string {
		t.Helper()
		p := filepath.Join(dir, "probe-"+name+".json")
		data, _ := json.Marshal(probeCacheFile{Version: probeCacheVersion, Key: "boot " + boot + "\nbinary " + binary + "\n", Exe: exe, Verdicts: map[string]string{}})
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, now.Add(-age), now.Add(-age)); err != nil {
			t.Fatal(err)
		}
		return p
	}
	gone := []string{
		write("otherboot", "b0", id, exe, time.Minute),
		write("gonebinary", "b1", id, filepath.Join(dir, "gone"), time.Minute),
		write("rebuilt", "b1", "another/build", exe, time.Minute),
		write("dayold", "b1", id, exe, 25*time.Hour),
	}
	kept := []string{
		write("live", "b1", id, exe, time.Minute),
		write("oldformat", "b1", id, "", time.Minute), // no exe: age and count only
	}
	var many []string // live too, but older: the count keeps the newest
	for i := range 20 {
		many = append(many, write(fmt.Sprintf("many%02d", i), "b1", id, exe, time.Hour+time.Duration(i)*time.Minute))
	}
	savedCache(t, dir, testKey, map[string]error{"p": nil}) // testKey's boot is b1
	for _, p := range gone {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s kept", filepath.Base(p))
		}
	}
	for _, p := range append(kept, many[:maxProbeCaches-1-len(kept)]...) {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s removed: %v", filepath.Base(p), err)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "probe-*.json")); len(left) != maxProbeCaches {
		t.Errorf("%d files left, want %d", len(left), maxProbeCaches)
	}
	// The file written names its binary.
	var cf probeCacheFile
	pc := openProbeCacheIn(t, dir)
	pc.store("q", nil)
	if err := pc.save(); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(pc.path); err != nil || json.Unmarshal(data, &cf) != nil || cf.Exe != exe {
		t.Errorf("saved file's exe %q (%v), want %q", cf.Exe, err, exe)
	}
}

// openProbeCacheIn is openProbeCache with IOPATH_PROBE_CACHE=dir.
func openProbeCacheIn(t *testing.T, dir string) *probeCache {
	t.Setenv("IOPATH_PROBE_CACHE", dir)
	pc := openProbeCache("")
	if pc == nil {
		t.Fatal("no probe cache")
	}
	return pc
}

// An attach refused with E2BIG (the kernel's bound on programs per hook,
// reached by other tools: 60 stray processes of another test each held a
// program on writeback/balance_dirty_pages) names that cause and its fix,
// and keeps the probe cache, whose verdicts are not at fault. Before, the
// error was "cannot create bpf perf link: argument list too long (the
// hooks were chosen from this boot's probe cache: removed it ...)".
func TestAttachErrorTooManyPrograms(t *testing.T) {
	dir := t.TempDir()
	savedCache(t, dir, testKey, map[string]error{"tracepoint:writeback/balance_dirty_pages:": nil})
	used := loadProbeCache(dir, testKey)
	wantVerdict(t, used, "tracepoint:writeback/balance_dirty_pages:", true, "")
	cause := fmt.Errorf("cannot create bpf perf link: %w", unix.E2BIG)
	err := attachError(used, "balance_dirty_pages", Tracepoint, "writeback/balance_dirty_pages", cause)
	if !errors.Is(err, unix.E2BIG) || !strings.Contains(err.Error(), "other BPF tools hold them all") || strings.Contains(err.Error(), "probe cache") {
		t.Errorf("E2BIG: %v", err)
	}
	if _, err := os.Stat(used.path); err != nil {
		t.Errorf("E2BIG: probe cache removed (%v)", err)
	}
	err = attachError(used, "vfs_read", Fentry, "vfs_read", unix.EPERM)
	if !strings.Contains(err.Error(), "probe cache: removed it") {
		t.Errorf("EPERM after reused verdicts: %v", err)
	}
}
