package tracer

import (
	"fmt"
	"os"
	"strings"
)

// Tgid maps a thread id to its process id via /proc (a tid passed as -p
// traces its whole process); pid itself when /proc does not say.
func Tgid(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return pid
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Tgid:"); ok {
			var tg int
			if _, err := fmt.Sscan(strings.TrimSpace(v), &tg); err == nil && tg > 0 {
				return tg
			}
		}
	}
	return pid
}

// taskComm is the comm of thread tid of process pid from /proc (zero when
// it is gone). The kernel sets a thread's comm in its per-thread state only
// when a call is streamed (bpf/op.h, op_stream_in): a thread alive at the
// end whose calls were all pure cache hits has none there.
func taskComm(pid, tid uint32) (c [16]int8) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/comm", pid, tid))
	if err != nil {
		return c
	}
	s := strings.TrimSuffix(string(b), "\n")
	for i := 0; i < len(s) && i < len(c)-1; i++ {
		c[i] = int8(s[i])
	}
	return c
}
