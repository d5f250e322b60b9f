package runtimetune

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// StartProfile writes a CPU profile of the whole run to the file named by
// IOPATH_CPUPROFILE (a development aid for the overhead work, docs/benchmarks.md:
// `go tool pprof iopath FILE`); the returned function ends it. Without the
// variable it does nothing. Not a flag: users never need it, and a failed
// profile must not change iopath's behaviour, so errors only go to stderr.
func StartProfile() func() {
	path := os.Getenv("IOPATH_CPUPROFILE")
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "iopath: IOPATH_CPUPROFILE:", err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintln(os.Stderr, "iopath: IOPATH_CPUPROFILE:", err)
		f.Close()
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}
