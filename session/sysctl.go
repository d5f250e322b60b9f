package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// A sysctl a run changes (the write-1byte demo's vm.dirty_expire_centisecs)
// is recorded before it is changed, in a state file named after the run's
// pid; the run removes the record when it puts the old value back. A run
// killed by SIGKILL cannot, so the next run puts back the values of records
// whose process is gone (RestoreStaleSysctls), as CleanStale does for work
// files. /run is a tmpfs: a reboot resets both the sysctls and the records.

// Where sysctls live and where their records go (tests point them at
// temporary directories).
var (
	sysctlRoot = "/proc/sys"
	stateDir   = "/run/iopath"
)

// sysctlChange is one record: name (as in /proc/sys, "vm/dirty_expire_centisecs"),
// the value before the run and the value it set.
type sysctlChange struct {
	Name string `json:"name"`
	Old  string `json:"old"`
	New  string `json:"new"`
}

// statePath is the record file of process pid.
func statePath(pid int) string {
	return filepath.Join(stateDir, "sysctl-"+strconv.Itoa(pid)+".json")
}

// SetSysctl sets /proc/sys/NAME to value for the rest of the run and
// returns the function that puts the old value back (call it on every way
// out: SIGINT and SIGTERM end a run through its deferred calls). The old
// value is recorded first; a sysctl that cannot be recorded is not changed.
func SetSysctl(name, value string) (restore func(), err error) {
	dot := strings.ReplaceAll(name, "/", ".")
	p := filepath.Join(sysctlRoot, name)
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", dot, err)
	}
	old := strings.TrimSpace(string(b))
	if err := addRecord(sysctlChange{Name: name, Old: old, New: value}); err != nil {
		return nil, fmt.Errorf("not changing %s: cannot record its old value (%w) for a later run to restore it if this one is killed: make %s writable", dot, err, stateDir)
	}
	if err := os.WriteFile(p, []byte(value), 0o644); err != nil {
		dropRecord(name)
		return nil, fmt.Errorf("setting %s=%s: %w", dot, value, err)
	}
	return func() {
		if err := os.WriteFile(p, []byte(old), 0o644); err == nil {
			dropRecord(name)
		}
	}, nil
}

// readRecords reads a record file (nil if there is none).
func readRecords(path string) ([]sysctlChange, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var cs []sysctlChange
	if err := json.Unmarshal(b, &cs); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cs, nil
}

// writeRecords replaces this process's record file with cs (removes it
// when cs is empty), atomically: a kill in between leaves the old one.
func writeRecords(cs []sysctlChange) error {
	path := statePath(os.Getpid())
	if len(cs) == 0 {
		return os.Remove(path)
	}
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		return err
	}
	b, err := json.Marshal(cs)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// addRecord adds c to this process's records; an earlier record of the
// same sysctl keeps its old value (the one from before the run).
func addRecord(c sysctlChange) error {
	cs, _ := readRecords(statePath(os.Getpid()))
	for i := range cs {
		if cs[i].Name == c.Name {
			cs[i].New = c.New
			return writeRecords(cs)
		}
	}
	return writeRecords(append(cs, c))
}

// dropRecord removes name from this process's records.
func dropRecord(name string) {
	cs, _ := readRecords(statePath(os.Getpid()))
	out := cs[:0]
	for _, c := range cs {
		if c.Name != name {
			out = append(out, c)
		}
	}
	writeRecords(out)
}

// RestoreStaleSysctls puts back the sysctls that runs killed before they
// could restore them had changed, and says so on notes, one line each. A
// sysctl whose value is no longer the one that run set was changed since by
// someone else: it is left as it is (said too). Records of running
// processes are left.
func RestoreStaleSysctls(notes io.Writer) {
	ents, err := os.ReadDir(stateDir)
	if err != nil {
		return
	}
	for _, e := range ents {
		num, ok := strings.CutPrefix(e.Name(), "sysctl-")
		if !ok {
			continue
		}
		num, tmp := strings.CutSuffix(num, ".json.tmp") // killed while writing its record
		if !tmp {
			num, ok = strings.CutSuffix(num, ".json")
		}
		pid, err := strconv.Atoi(num)
		if !ok || err != nil || pid <= 0 || pid == os.Getpid() || !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			continue
		}
		if tmp {
			os.Remove(filepath.Join(stateDir, e.Name()))
			continue
		}
		// Claim the record: of two runs starting at once, one restores.
		path := filepath.Join(stateDir, e.Name())
		claimed := path + ".restoring-" + strconv.Itoa(os.Getpid())
		if os.Rename(path, claimed) != nil {
			continue
		}
		cs, err := readRecords(claimed)
		if err != nil {
			fmt.Fprintf(notes, "iopath: cannot read the sysctls iopath pid %d changed (%v): check them by hand\n", pid, err)
		}
		for _, c := range cs {
			fmt.Fprintln(notes, restoreOne(c, pid))
		}
		os.Remove(claimed)
	}
}

// restoreOne puts c.Old back if the sysctl still has c.New, and returns the
// line that says what it did.
func restoreOne(c sysctlChange, pid int) string {
	dot := strings.ReplaceAll(c.Name, "/", ".")
	p := filepath.Join(sysctlRoot, c.Name)
	b, err := os.ReadFile(p)
	if err != nil {
		return fmt.Sprintf("iopath: cannot restore %s=%s, changed by iopath pid %d which was killed: %v", dot, c.Old, pid, err)
	}
	if now := strings.TrimSpace(string(b)); now != c.New {
		return fmt.Sprintf("iopath: left %s=%s as it is: iopath pid %d, which was killed, had set it to %s (from %s), and it was changed since", dot, now, pid, c.New, c.Old)
	}
	if err := os.WriteFile(p, []byte(c.Old), 0o644); err != nil {
		return fmt.Sprintf("iopath: cannot restore %s=%s, changed by iopath pid %d which was killed: %v", dot, c.Old, pid, err)
	}
	return fmt.Sprintf("iopath: restored %s=%s: iopath pid %d set it to %s and was killed before it could restore it", dot, c.Old, pid, c.New)
}
