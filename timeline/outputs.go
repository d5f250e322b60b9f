package timeline

import (
	"fmt"
	"os"
	"path/filepath"
)

// CheckApart refuses an -o (output) that names the file of --timeline
// (trace) or --report (report): only the last writer's output would be
// left in it. "" names no file.
func CheckApart(output, trace, report string) error {
	if output == "" {
		return nil
	}
	for _, x := range []struct{ flag, path string }{{"--timeline", trace}, {"--report", report}} {
		if x.path != "" && samePath(output, x.path) {
			return fmt.Errorf("-o and %s both name %s: give them different files", x.flag, output)
		}
	}
	return nil
}

// samePath says whether a and b name one file: the same cleaned absolute
// path, or the same existing inode.
func samePath(a, b string) bool {
	aa, errA := filepath.Abs(a)
	bb, errB := filepath.Abs(b)
	if errA == nil && errB == nil && aa == bb {
		return true
	}
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(sa, sb)
}
