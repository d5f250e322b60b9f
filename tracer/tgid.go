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
