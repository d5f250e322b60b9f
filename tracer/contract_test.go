package tracer

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/cilium/ebpf/btf"
	"github.com/iopath/iopath/bpf"
	"github.com/iopath/iopath/tracer/engine"
)

// headerEnums parses the enums of a C header: name -> constant -> value
// (explicit "= N" or the previous value + 1).
func headerEnums(t *testing.T, path string) map[string]map[string]uint64 {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := regexp.MustCompile(`(?s)/\*.*?\*/`).ReplaceAllString(string(src), "")
	out := map[string]map[string]uint64{}
	for _, m := range regexp.MustCompile(`(?s)enum (\w+) \{(.*?)\};`).FindAllStringSubmatch(text, -1) {
		vals := map[string]uint64{}
		next := uint64(0)
		for _, item := range strings.Split(m[2], ",") {
			item = strings.TrimSpace(item)
			if item == "" {
				continue
			}
			name, val, explicit := strings.Cut(item, "=")
			name = strings.TrimSpace(name)
			if explicit {
				v, err := strconv.ParseUint(strings.TrimSpace(val), 0, 64)
				if err != nil {
					t.Fatalf("%s: enum %s: %s is not a number", path, m[1], item)
				}
				next = v
			}
			vals[name] = next
			next++
		}
		out[m[1]] = vals
	}
	return out
}

// The C↔Go contract is generated, never copied: each enum of
// bpf/events.h must have the values the committed object's BTF (and so
// bpf2go's Go constants) has. A flag renumbered in C without `go generate
// ./bpf` fails here instead of decoding silently wrong.
func TestContractEnums(t *testing.T) {
	src := headerEnums(t, "../bpf/events.h")
	spec, err := bpf.LoadIopath()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"op_sys", "ev_type", "counter", "range_flag", "ra_kind", "own_flag", "path_done_flag", "unattributed_cause"} {
		want, ok := src[name]
		if !ok {
			t.Errorf("bpf/events.h has no enum %s", name)
			continue
		}
		var e *btf.Enum
		if err := spec.Types.TypeByName(name, &e); err != nil {
			t.Errorf("the BPF object has no enum %s: %v", name, err)
			continue
		}
		got := map[string]uint64{}
		for _, v := range e.Values {
			got[v.Name] = v.Value
		}
		for k, v := range want {
			if g, ok := got[k]; !ok || g != v {
				t.Errorf("enum %s: %s is %d in bpf/events.h, %d (present %v) in the object: run go generate ./bpf", name, k, v, g, ok)
			}
		}
		if len(got) != len(want) {
			t.Errorf("enum %s: %d values in bpf/events.h, %d in the object: run go generate ./bpf", name, len(want), len(got))
		}
	}
	// The Go constants the decoder uses are the object's.
	goConsts := map[string]uint64{
		"RANGE_ADDED": uint64(engine.RangeAdded), "RANGE_DIRTIED": uint64(engine.RangeDirtied),
		"RA_SYNC": uint64(engine.RASync), "RA_ASYNC": uint64(engine.RAAsync), "RA_ORDER": uint64(engine.RAOrder),
		"OWN_WRITEBACK": uint64(engine.OwnWriteback), "OWN_JOURNAL": uint64(engine.OwnJournal),
		"OWN_FLUSH_SEQ": uint64(engine.OwnFlushSeq), "PATH_NAME_ONLY": uint64(pathNameOnly),
		"EV_FLUSH_DONE": uint64(bpf.IopathEvTypeEV_FLUSH_DONE),
		"EV_OP":         uint64(bpf.IopathEvTypeEV_OP), "EV_PATH": uint64(bpf.IopathEvTypeEV_PATH),
		"EV_RQ_ISSUE": uint64(bpf.IopathEvTypeEV_RQ_ISSUE), "EV_WB_BIO": uint64(bpf.IopathEvTypeEV_WB_BIO),
		"SYS_MAX": uint64(bpf.IopathOpSysSYS_MAX), "CNT_MAX": uint64(bpf.IopathCounterCNT_MAX),
	}
	all := map[string]uint64{}
	for _, vals := range src {
		for k, v := range vals {
			all[k] = v
		}
	}
	for k, v := range goConsts {
		if all[k] != v {
			t.Errorf("Go's %s = %d, bpf/events.h's %d: run go generate ./bpf", k, v, all[k])
		}
	}
}

// Every kernel counter has a summary name, and no two share one.
func TestCounterNames(t *testing.T) {
	seen := map[string]bool{}
	for i, n := range counterNames {
		if n == "" {
			t.Errorf("counter %d (enum counter in bpf/events.h) has no name in counterNames", i)
		}
		if seen[n] {
			t.Errorf("counter name %q used twice", n)
		}
		seen[n] = true
	}
}
