package session

import (
	"fmt"
	"io"
	"strings"

	"github.com/iopath/iopath/tracer"
)

// SayAttached says on errw which mechanism each hook uses, which hooks this
// kernel cannot give, and which --force-mechanism wishes were not granted.
func SayAttached(errw io.Writer, hooks []tracer.HookStatus, force map[string]tracer.Mechanism) {
	fmt.Fprintln(errw, attachLine(hooks))
	for _, h := range hooks {
		if h.Hook == tracer.SpareHook { // tracer/spare.go: why they attached at start
			fmt.Fprintln(errw, "iopath: spare programs "+h.Variant)
		}
	}
	for _, w := range forceWarnings(force, hooks) {
		fmt.Fprintln(errw, "iopath:", w)
	}
}

func attachLine(hooks []tracer.HookStatus) string {
	var parts []string
	var missing []string
	for _, h := range hooks {
		m := string(h.Mechanism)
		if h.Variant == "attached with --all only" {
			m = "off(--all)"
		} else if strings.HasPrefix(h.Variant, "not attached") {
			m = "off"
		}
		parts = append(parts, fmt.Sprintf("%s=%s", h.Hook, m))
		if h.Mechanism == tracer.None {
			why := ""
			if n := len(h.Rejected); n > 0 && strings.Contains(h.Rejected[n-1], "the verifier refused") {
				// Not the kernel's lack: iopath's program for it (a bug to report).
				why = "; " + h.Rejected[n-1]
			}
			missing = append(missing, fmt.Sprintf("%s (no %s%s)", h.Hook, h.Loses, why))
		}
	}
	s := "iopath: attached " + strings.Join(parts, " ")
	if len(missing) > 0 {
		s += "\niopath: unavailable on this kernel: " + strings.Join(missing, ", ")
	}
	return s
}

// forceWarnings says which hooks do not run on the mechanism
// --force-mechanism asked for (it is a preference: a hook without it, or
// whose kernel refuses it, keeps its best other mechanism).
func forceWarnings(force map[string]tracer.Mechanism, hooks []tracer.HookStatus) []string {
	var out, others []string
	for _, h := range hooks {
		want, ok := force[h.Hook]
		all := !ok
		if all {
			if want, ok = force["*"]; !ok {
				continue
			}
		}
		if h.Mechanism == want {
			continue
		}
		if all {
			others = append(others, h.Hook+"="+string(h.Mechanism))
			continue
		}
		why := "this hook has no " + string(want) + " stand-in"
		for _, r := range h.Rejected {
			if strings.HasPrefix(r, string(want)+": ") {
				why = r
			}
		}
		out = append(out, fmt.Sprintf("--force-mechanism %s=%s not used (%s): %s runs on %s", h.Hook, want, why, h.Hook, h.Mechanism))
	}
	if len(others) > 0 {
		out = append(out, fmt.Sprintf("--force-mechanism *=%s: %d hooks cannot use it and keep another mechanism: %s",
			force["*"], len(others), strings.Join(others, " ")))
	}
	return out
}
