package session

import (
	"fmt"
	"os"
	"strings"

	"github.com/iopath/iopath/internal/workdir"
)

// initPidNS is the inode of the initial (host's) pid namespace:
// PROC_PID_INIT_INO, include/linux/proc_ns.h, fixed since Linux 3.8.
const initPidNS = 0xEFFFFFFC

// CheckPidNamespace refuses to trace from a pid namespace other than the
// host's (a container without --pid=host, unshare -p): the BPF programs
// filter and report the pids bpf_get_current_pid_tgid gives, the host's,
// while iopath, its command and -p name pids of its own namespace, so the
// trace would be empty with no word. (Translating with
// bpf_get_ns_current_pid_tgid, Linux 5.7, would have to cover every pid
// the programs read, tasks' tgid at fork and exit included.)
func CheckPidNamespace() error {
	ns := workdir.PidNamespace()
	if ns == 0 || ns == initPidNS {
		return nil // the host's, or /proc cannot say: the tracer says what it can
	}
	nspid := "?"
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "NSpid:"); ok {
				nspid = strings.Join(strings.Fields(v), " ")
			}
		}
	}
	return fmt.Errorf("iopath runs in a pid namespace (NSpid %s, pid:[%d]) whose pids the kernel's hooks do not see: run it in the host's, e.g. docker run --pid=host, or without unshare -p", nspid, ns)
}
