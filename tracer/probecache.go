package tracer

import (
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The probe cache keeps the verdict of every probe (a test attach, a BTF
// shape check, a helper check) in a file, so that the next iopath process on
// the same boot skips them. Each fentry/fexit or kprobe test attach patches
// kernel text twice (attach, detach): ~50 ms on a real CPU, ~2 s per `iopath
// trace` under qemu TCG, where every text patch throws away translated code.
//
// A verdict can only be reused by the same binary on the same kernel in the
// same state, so the file is keyed by (probeCacheKey): the boot (boot_id), the
// binary (its Go build ID: hook lists and probe code change with it), the
// kernel's release and BTF, the loaded modules (a module brings functions,
// tracepoints and BTF), the tracefs mount and the lockdown mode. Any change
// in these makes a different key and the old file is ignored, never trusted.
//
// IOPATH_PROBE_CACHE=off bypasses it (probe everything, write nothing);
// IOPATH_PROBE_CACHE=DIR keeps the files in DIR, an existing directory given
// by its absolute path (env.go), instead of /run/iopath.
// `iopath doctor` always probes afresh (it is the diagnosis) and refreshes
// the file.

// probeCacheDir is the default directory: /run is a tmpfs emptied at boot
// on systemd machines; where it is not, the boot_id in the key still makes
// a previous boot's file useless.
const probeCacheDir = "/run/iopath"

// probeCacheVersion changes when the file format does.
const probeCacheVersion = 1

// probeCache is one binary's verdicts for one kernel state. Verdicts maps a
// probe key (prober.cached) to "" when the probe passed, else its refusal.
type probeCache struct {
	path     string
	key      string
	exe      string // the binary's path, written to the file for pruneProbeCaches
	verdicts map[string]string
	added    int // verdicts not yet in the file
	hits     int
}

type probeCacheFile struct {
	Version  int               `json:"version"`
	Key      string            `json:"key"`
	Exe      string            `json:"exe,omitempty"` // the binary's path when written
	Written  time.Time         `json:"written"`
	Verdicts map[string]string `json:"verdicts"`
}

// openProbeCache returns the cache for this process, or nil when it is off
// (IOPATH_PROBE_CACHE=off) or the key cannot be formed (no build ID, no
// boot_id): then every probe runs, as without a cache.
func openProbeCache(tracefs string) *probeCache {
	dir, err := probeCacheEnv()
	if err != nil || dir == "" { // a bad value: refused by checkEnv first
		return nil
	}
	key, err := probeCacheKey(tracefs)
	if err != nil {
		probeCacheLog("probe cache off: %v", err)
		return nil
	}
	pc := loadProbeCache(dir, key)
	pc.exe, _ = os.Executable()
	return pc
}

// loadProbeCache reads DIR's file for key. A missing, unreadable, corrupt
// or foreign file (another key, not owned by us, writable by others) gives
// an empty cache: its verdicts are never used.
func loadProbeCache(dir, key string) *probeCache {
	sum := sha256.Sum256([]byte(key))
	pc := &probeCache{path: filepath.Join(dir, "probe-"+hex.EncodeToString(sum[:8])+".json"), key: key, verdicts: map[string]string{}}
	f, err := os.Open(pc.path)
	if err != nil {
		return pc
	}
	defer f.Close()
	if err := trustedFile(f); err != nil {
		probeCacheLog("probe cache: ignoring %s: %v", pc.path, err)
		return pc
	}
	var cf probeCacheFile
	if err := json.NewDecoder(f).Decode(&cf); err != nil {
		probeCacheLog("probe cache: ignoring %s: %v", pc.path, err)
		return pc
	}
	if cf.Version != probeCacheVersion || cf.Key != key || cf.Verdicts == nil {
		// a hash collision of the file name or an older format
		return pc
	}
	pc.verdicts = cf.Verdicts
	return pc
}

// trustedFile refuses a file that another user could have written: the
// verdicts decide which kernel hooks get attached.
func trustedFile(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || !fi.Mode().IsRegular() {
		return errors.New("not a regular file")
	}
	if int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("owned by uid %d, not %d", st.Uid, os.Geteuid())
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("writable by others (mode %v)", fi.Mode().Perm())
	}
	return nil
}

// lookup returns the verdict stored for key: found, and the refusal or nil.
func (pc *probeCache) lookup(key string) (found bool, verdict error) {
	if pc == nil {
		return false, nil
	}
	v, ok := pc.verdicts[key]
	if !ok {
		return false, nil
	}
	pc.hits++
	if v == "" {
		return true, nil
	}
	return true, errors.New(v)
}

// store records a fresh verdict, unless it may be transient (out of
// memory, busy, interrupted, an inconclusive helper check): those are
// probed again next time.
func (pc *probeCache) store(key string, err error) {
	if pc == nil {
		return
	}
	v := ""
	if err != nil {
		v = err.Error()
		if transientVerdict(v) {
			delete(pc.verdicts, key)
			return
		}
	}
	if old, ok := pc.verdicts[key]; ok && old == v {
		return
	}
	pc.verdicts[key] = v
	pc.added++
}

// transientErrnos are the errors a probe can hit for a reason that is not
// the kernel's answer (memory, locks, signals, file descriptors; E2BIG: an
// fentry/fexit trampoline holding its 38 programs, other tools' while they
// run, for a probe's trivial program).
var transientErrnos = []unix.Errno{unix.ENOMEM, unix.EAGAIN, unix.EBUSY, unix.EINTR, unix.EMFILE, unix.ENFILE, unix.E2BIG}

func transientVerdict(v string) bool {
	if strings.Contains(v, "probe inconclusive") {
		return true
	}
	for _, e := range transientErrnos {
		if strings.Contains(v, e.Error()) {
			return true
		}
	}
	return false
}

// save writes the verdicts when there are new ones: to a temporary file
// renamed over the old one, so a concurrent reader (who takes no lock) sees
// the old or the new file whole, never a part. Writers hold an flock on
// DIR/.lock from merging the file's current verdicts to the rename, so two
// processes saving at once both keep theirs. Errors only lose the cache.
func (pc *probeCache) save() error {
	if pc == nil || pc.added == 0 {
		return nil
	}
	dir := filepath.Dir(pc.path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer lock.Close() // releases the flock
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return fmt.Errorf("locking %s: %w", lock.Name(), err)
	}
	// Merge what another process wrote since we read the file.
	if cur := loadProbeCache(dir, pc.key); len(cur.verdicts) > 0 {
		for k, v := range cur.verdicts {
			if _, ok := pc.verdicts[k]; !ok {
				pc.verdicts[k] = v
			}
		}
	}
	data, err := json.Marshal(probeCacheFile{Version: probeCacheVersion, Key: pc.key, Exe: pc.exe, Written: time.Now().UTC(), Verdicts: pc.verdicts})
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".probe-*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a successful rename: ENOENT, ignored
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), pc.path); err != nil {
		return err
	}
	pc.added = 0
	pruneProbeCaches(dir, pc.path, keyField(pc.key, "boot"))
	return nil
}

// maxProbeCaches bounds the files kept in the directory: each build of
// iopath or of a test binary makes a new key, and /run/iopath held ~140
// files of binaries long gone.
const maxProbeCaches = 16

// pruneProbeCaches removes, under the writers' lock, the other files of
// dir that no run can use again: another boot's, those of a binary that
// is gone or was rebuilt (its path holds another build ID now), those
// unused for a day; then, of the rest, all but the newest maxProbeCaches-1
// besides keep. Only files of this user are touched.
func pruneProbeCaches(dir, keep, boot string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	type kept struct {
		path string
		mod  time.Time
	}
	var rest []kept
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		if p == keep || !strings.HasPrefix(e.Name(), "probe-") || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Geteuid() || !fi.Mode().IsRegular() {
			continue
		}
		if time.Since(fi.ModTime()) > 24*time.Hour || staleProbeCache(p, boot) {
			os.Remove(p)
			continue
		}
		rest = append(rest, kept{p, fi.ModTime()})
	}
	slices.SortFunc(rest, func(a, b kept) int { return b.mod.Compare(a.mod) })
	for _, k := range rest[min(len(rest), maxProbeCaches-1):] {
		os.Remove(k.path)
	}
}

// staleProbeCache reports whether the file at path is of another boot, or
// of a binary that is gone or was rebuilt (another build ID at its path). A file it cannot read is not
// (the age and the count bound it).
func staleProbeCache(path, boot string) bool {
	data, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	var cf probeCacheFile
	if json.Unmarshal(data, &cf) != nil {
		return false
	}
	if b := keyField(cf.Key, "boot"); b != "" && boot != "" && b != boot {
		return true
	}
	if cf.Exe == "" {
		return false // written before the path was kept
	}
	id, err := goBuildID(cf.Exe)
	if err != nil {
		return !errors.Is(err, fs.ErrPermission) // gone, or no Go binary now
	}
	return id != keyField(cf.Key, "binary")
}

// keyField is the value of a probeCacheKey line ("boot …", "binary …").
func keyField(key, name string) string {
	for l := range strings.Lines(key) {
		if v, ok := strings.CutPrefix(l, name+" "); ok {
			return strings.TrimSuffix(v, "\n")
		}
	}
	return ""
}

// probeCacheKey describes everything a verdict depends on besides the
// probe itself. An error when the boot or the binary cannot be identified.
func probeCacheKey(tracefs string) (string, error) {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", fmt.Errorf("no boot_id: %w", err)
	}
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	id, err := goBuildID(exe)
	if err != nil {
		return "", err
	}
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "boot %s\n", bytes.TrimSpace(boot))
	fmt.Fprintf(&b, "binary %s\n", id)
	fmt.Fprintf(&b, "kernel %s %s\n", unix.ByteSliceToString(u.Release[:]), unix.ByteSliceToString(u.Version[:]))
	if fi, err := os.Stat("/sys/kernel/btf/vmlinux"); err == nil {
		fmt.Fprintf(&b, "btf %d %d\n", fi.Size(), fi.ModTime().UnixNano())
	}
	fmt.Fprintf(&b, "modules %s\n", strings.Join(loadedModules(), " "))
	fmt.Fprintf(&b, "tracefs %s\n", tracefs)
	if l, err := os.ReadFile("/sys/kernel/security/lockdown"); err == nil {
		fmt.Fprintf(&b, "lockdown %s\n", bytes.TrimSpace(l))
	}
	return b.String(), nil
}

// loadedModules lists /proc/modules' names, sorted (the kernel lists the
// newest first).
func loadedModules() []string {
	data, err := os.ReadFile("/proc/modules")
	if err != nil {
		return nil
	}
	var mods []string
	for l := range strings.Lines(string(data)) {
		if name, _, ok := strings.Cut(l, " "); ok {
			mods = append(mods, name)
		}
	}
	slices.Sort(mods)
	return mods
}

// goBuildID reads the Go build ID note of an executable (the linker's
// content hash: any change to the code gives another).
func goBuildID(path string) (string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return "", fmt.Errorf("reading the build ID of %s: %w", path, err)
	}
	defer f.Close()
	s := f.Section(".note.go.buildid")
	if s == nil {
		return "", fmt.Errorf("%s has no Go build ID note", path)
	}
	data, err := s.Data()
	if err != nil {
		return "", err
	}
	// ELF note: namesz, descsz, type (4 bytes each), "Go\0\0", then the ID.
	if len(data) < 16 || string(data[12:16]) != "Go\x00\x00" {
		return "", fmt.Errorf("%s: malformed Go build ID note", path)
	}
	descsz := int(f.ByteOrder.Uint32(data[4:8]))
	if 16+descsz > len(data) || descsz == 0 {
		return "", fmt.Errorf("%s: malformed Go build ID note", path)
	}
	return string(data[16 : 16+descsz]), nil
}

// probeCacheLog prints a diagnostic under IOPATH_VERBOSE=1.
func probeCacheLog(format string, args ...any) {
	if os.Getenv("IOPATH_VERBOSE") != "" {
		fmt.Fprintf(os.Stderr, "iopath: "+format+"\n", args...)
	}
}

// cached returns the verdict of the probe named key: from this process's
// memory, else from the probe cache file, else by running probe.
func (p *prober) cached(key string, probe func() error) error {
	if err, ok := p.cache[key]; ok {
		return err
	}
	ok, err := p.disk.lookup(key)
	if !ok {
		err = probe()
		p.disk.store(key, err)
	}
	p.cache[key] = err
	return err
}

// saveCache writes the new verdicts; a failure only costs the next run
// its probes (said under IOPATH_VERBOSE=1).
func (p *prober) saveCache() {
	if p.disk == nil {
		return
	}
	probeCacheLog("probe cache %s: %d verdicts reused, %d new", p.disk.path, p.disk.hits, p.disk.added)
	if err := p.disk.save(); err != nil {
		probeCacheLog("probe cache not saved: %v", err)
	}
}

// forget drops the verdicts read from the file: every probe runs again and
// its verdict replaces the stored one (`iopath doctor`).
func (pc *probeCache) forget() {
	if pc != nil {
		pc.verdicts = map[string]string{}
	}
}

// suspect is called when the hooks chosen from cached verdicts fail to
// load or attach: a verdict may have gone stale in a way the key does not
// see (a BPF LSM policy, ftrace disabled by sysctl). The file is removed so
// the next run probes afresh, and err says so. Without reused verdicts err
// is returned as it is.
func (pc *probeCache) suspect(err error) error {
	if pc == nil || pc.hits == 0 || err == nil {
		return err
	}
	pc.hits = 0
	if rmErr := os.Remove(pc.path); rmErr != nil && !errors.Is(rmErr, os.ErrNotExist) {
		return fmt.Errorf("%w (the hooks were chosen from the probe cache %s, which could not be removed: %w; IOPATH_PROBE_CACHE=off probes afresh)", err, pc.path, rmErr)
	}
	return fmt.Errorf("%w (the hooks were chosen from this boot's probe cache: removed it, the next run probes afresh)", err)
}
