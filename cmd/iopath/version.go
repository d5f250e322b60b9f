package main

import (
	"runtime"
	"runtime/debug"
)

// version is what `iopath --version` prints after "iopath version ": the
// module version (a tag, or "(devel)" for a build from a checkout), the
// commit it was built from and whether the tree had changes (Go records
// both when it builds inside a git checkout), and the Go release.
func version() string {
	v := "(devel)"
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v + " " + runtime.Version()
	}
	if bi.Main.Version != "" {
		v = bi.Main.Version
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev != "" {
		v += " commit " + rev[:min(12, len(rev))]
		if modified == "true" {
			v += " (with uncommitted changes)"
		}
	}
	return v + " " + bi.GoVersion
}
