package tracer

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// HookStatus says which mechanism a hook got, or why it got none.
type HookStatus struct {
	Hook      string    `json:"hook"`
	Mechanism Mechanism `json:"mechanism"`
	Variant   string    `json:"variant,omitempty"`
	Targets   []string  `json:"targets,omitempty"` // functions or tracepoints attached
	Loses     string    `json:"loses,omitempty"`   // what is unavailable when Mechanism is none
	// Rejected lists the better mechanisms that were tried, with the reason.
	Rejected []string `json:"rejected,omitempty"`
}

// prober tests mechanisms against the running kernel: a BTF lookup plus a
// real test attach for fentry and kprobe (a function can be in BTF and still
// refuse: EPERM here, or be inlined), the tracefs event for tracepoints, and
// the btf_trace_* typedef for tp_btf.
type prober struct {
	kspec   *btf.Spec
	btf     *btf.Cache // shared: each fentry test load would otherwise parse the kernel's BTF again
	tracefs string
	cache   map[string]error
	disk    *probeCache // verdicts of earlier processes on this boot (probecache.go); nil: off
	// preemptible: the kernel's preemption model preempts kernel code
	// (spare.go preempts), so a thread can be preempted inside a tracing
	// program and the kernel then skips it for others: choose tries the
	// candidates marked unpreempted first.
	preemptible bool
}

func newProber(c *btf.Cache) (*prober, error) {
	kspec, err := c.Kernel()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoBTF, err)
	}
	model, _ := preemptModel()
	p := &prober{kspec: kspec, btf: c, tracefs: TracefsDir(), cache: map[string]error{}, preemptible: preempts(model)}
	p.disk = openProbeCache(p.tracefs)
	return p, nil
}

// TracefsDir returns the tracefs mount, mounting it at /sys/kernel/tracing
// when no mount is found (tracepoint IDs live there; a minimal system or a
// container may not mount it). The mount is said on stderr and left in place,
// as systemd would have made it. Empty if impossible.
func TracefsDir() string {
	for _, d := range []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"} {
		if _, err := os.Stat(filepath.Join(d, "events")); err == nil {
			return d
		}
	}
	if err := unix.Mount("tracefs", "/sys/kernel/tracing", "tracefs", 0, ""); err == nil {
		fmt.Fprintln(os.Stderr, "iopath: tracefs was not mounted: mounted it at /sys/kernel/tracing (tracepoint IDs are read there; it stays mounted)")
		return "/sys/kernel/tracing"
	}
	return ""
}

func (p *prober) probe(c candidate) error {
	for _, h := range c.needs {
		if err := p.cached("helper:"+h.String(), func() error {
			if err := features.HaveProgramHelper(ebpf.Kprobe, h); err != nil {
				return fmt.Errorf("needs helper %s: %s", strings.TrimPrefix(h.String(), "Fn"), probeVerdict(err))
			}
			return nil
		}); err != nil {
			return err
		}
	}
	for _, a := range c.attach {
		if err := p.cached(fmt.Sprint(a.kind, ":", a.target, ":", a.shape), func() error { return p.probeOne(a) }); err != nil {
			return err
		}
	}
	return nil
}

// probeOne checks that a attaches and then that the kernel's argument list
// is the one its program expects (shape.go).
func (p *prober) probeOne(a attachment) error {
	if err := p.probeAttach(a); err != nil || a.shape == "" {
		return err
	}
	return p.checkShape(a)
}

func (p *prober) probeAttach(a attachment) error {
	switch a.kind {
	case akFentry, akFexit:
		return probeTracing(a.target, a.kind == akFexit, p.btf)
	case akKprobe, akKretprobe:
		return probeKprobe(a.target, a.kind == akKretprobe)
	case akTracepoint:
		if p.tracefs == "" {
			return errors.New("tracefs is not mounted and could not be mounted")
		}
		if _, err := os.Stat(filepath.Join(p.tracefs, "events", a.target, "id")); err != nil {
			return fmt.Errorf("tracepoint %s does not exist on this kernel", a.target)
		}
		return nil
	case akPerfEvent:
		return probePerf(a.target)
	case akTPBTF:
		var td *btf.Typedef
		err := p.kspec.TypeByName("btf_trace_"+a.target, &td)
		if err != nil && a.module != "" {
			// Not built in: the module's BTF, if it is loaded (the loader
			// finds the event there too).
			mspec, merr := p.btf.Module(a.module)
			if merr != nil {
				return fmt.Errorf("no BTF tracepoint %s on this kernel (module %s: not loaded, or no BTF)", a.target, a.module)
			}
			err = mspec.TypeByName("btf_trace_"+a.target, &td)
		}
		if err != nil {
			return fmt.Errorf("no BTF tracepoint %s on this kernel", a.target)
		}
		return nil
	}
	return fmt.Errorf("unknown attach kind %d", a.kind)
}

var trivial = asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()}

func probeTracing(fn string, exit bool, c *btf.Cache) error {
	at := ebpf.AttachTraceFEntry
	if exit {
		at = ebpf.AttachTraceFExit
	}
	spec := &ebpf.CollectionSpec{Programs: map[string]*ebpf.ProgramSpec{"probe": {Type: ebpf.Tracing,
		AttachType: at, AttachTo: fn, Instructions: trivial, License: "GPL"}}}
	coll, err := ebpf.NewCollectionWithOptions(spec, ebpf.CollectionOptions{Cache: c})
	if err != nil {
		return fmt.Errorf("fentry/fexit %s: %s", fn, shortErr(err))
	}
	defer coll.Close()
	prog := coll.Programs["probe"]
	l, err := link.AttachTracing(link.TracingOptions{Program: prog})
	if err != nil {
		return fmt.Errorf("fentry/fexit %s attach: %s", fn, shortErr(err))
	}
	return l.Close()
}

func probeKprobe(fn string, ret bool) error {
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.Kprobe, Instructions: trivial, License: "GPL"})
	if err != nil {
		return fmt.Errorf("kprobe program: %s", shortErr(err))
	}
	defer prog.Close()
	var l link.Link
	if ret {
		l, err = link.Kretprobe(fn, prog, nil)
	} else {
		l, err = link.Kprobe(fn, prog, nil)
	}
	if err != nil {
		if errors.Is(err, os.ErrNotExist) && !kprobesAvailable() {
			return errors.New("kprobes unavailable (CONFIG_KPROBES not set: no kprobe PMU, no kprobe_events)")
		}
		return fmt.Errorf("kprobe %s: %s", fn, shortErr(err))
	}
	return l.Close()
}

func kprobesAvailable() bool {
	if _, err := os.Stat("/sys/bus/event_source/devices/kprobe"); err == nil {
		return true
	}
	_, err := os.Stat("/sys/kernel/tracing/kprobe_events")
	return err == nil
}

// shortErr trims cilium/ebpf's verifier log from an error.
func shortErr(err error) string {
	s := err.Error()
	if i := strings.Index(s, "\n"); i >= 0 {
		s = s[:i]
	}
	s = strings.TrimPrefix(s, "program probe: ") // our test load's name adds nothing
	// We removed the memlock limit already; the hint misleads.
	return strings.TrimSuffix(s, " (MEMLOCK may be too low, consider rlimit.RemoveMemlock)")
}

// choose picks a mechanism per hook. force maps a hook name (or "*") to the
// mechanism it must use; a forced hook that cannot use it falls back and
// says so in Rejected.
func (p *prober) choose(hooks []Hook, force map[string]Mechanism) ([]HookStatus, map[string]candidate) {
	var out []HookStatus
	chosen := map[string]candidate{}
	for _, h := range hooks {
		st := HookStatus{Hook: h.Name, Mechanism: None}
		want, forced := force[h.Name]
		if !forced {
			want, forced = force["*"]
		}
		cands := h.candidates
		if p.preemptible && !forced {
			cands = unpreemptedFirst(cands)
		}
		if forced {
			var pref, rest []candidate
			for _, c := range cands {
				if c.mech == want {
					pref = append(pref, c)
				} else {
					rest = append(rest, c)
				}
			}
			if len(pref) > 0 {
				pref = append(pref, rest...)
				cands = pref
			}
		}
		for _, c := range cands {
			if err := p.probe(c); err != nil {
				// Candidates for older argument lists fail the same way
				// where the mechanism itself is refused: said once.
				if r := fmt.Sprintf("%s: %v", c.mech, err); !slices.Contains(st.Rejected, r) {
					st.Rejected = append(st.Rejected, r)
				}
				continue
			}
			st.Mechanism = c.mech
			st.Variant = c.variant
			if p.preemptible && !forced && c.unpreempted && !h.candidates[0].unpreempted {
				st.Variant = strings.TrimPrefix(st.Variant+"; ", "; ") +
					"tried first: this kernel preempts tracing programs (a thread preempted inside a fentry program makes the kernel skip it for others); these have spare programs or run with interrupts off"
			}
			for _, a := range c.attach {
				st.Targets = append(st.Targets, a.kind.String()+" "+a.target)
			}
			chosen[h.Name] = c
			break
		}
		if st.Mechanism == None {
			st.Loses = h.Loses
		}
		out = append(out, st)
	}
	p.saveCache()
	return out, chosen
}

// unpreemptedFirst orders cands with the unpreempted ones first, each group
// in its own order.
func unpreemptedFirst(cands []candidate) []candidate {
	out := make([]candidate, 0, len(cands))
	for _, c := range cands {
		if c.unpreempted {
			out = append(out, c)
		}
	}
	for _, c := range cands {
		if !c.unpreempted {
			out = append(out, c)
		}
	}
	return out
}
