package tracer

import (
	"fmt"
	"strings"
)

// ParseForce checks and converts --force-mechanism's HOOK=MECHANISM
// values: HOOK a hook's name (Hooks) or * for every hook, MECHANISM one of
// fentry, kprobe, tp_btf and tracepoint.
func ParseForce(force map[string]string) (map[string]Mechanism, error) {
	hooks := map[string]bool{"*": true}
	var names []string
	for _, h := range Hooks() {
		hooks[h.Name] = true
		names = append(names, h.Name)
	}
	m := map[string]Mechanism{}
	for k, v := range force {
		if !hooks[k] {
			return nil, fmt.Errorf("--force-mechanism: unknown hook %q: use * or one of %s", k, strings.Join(names, ", "))
		}
		switch Mechanism(v) {
		case Fentry, Kprobe, TPBTF, Tracepoint:
		default:
			return nil, fmt.Errorf("--force-mechanism %s=%s: unknown mechanism: use fentry, kprobe, tp_btf or tracepoint", k, v)
		}
		m[k] = Mechanism(v)
	}
	return m, nil
}
