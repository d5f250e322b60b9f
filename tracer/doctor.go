package tracer

import (
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"golang.org/x/sys/unix"
)

// DoctorReport is what `iopath doctor` prints (also as JSON): the kernel,
// the prerequisites, and the mechanism each hook gets (Probe).
type DoctorReport struct {
	Kernel  string `json:"kernel"`
	Machine string `json:"machine"`
	BTF     bool   `json:"btf"`
	Root    bool   `json:"root"`
	Tracefs string `json:"tracefs"`
	Kprobes bool   `json:"kprobes"`
	// Preempt is the kernel's preemption model (spare.go preemptModel;
	// "" when nothing says), Spares when the spare programs attach.
	Preempt string       `json:"preempt_model"`
	Spares  string       `json:"spares"`
	Hooks   []HookStatus `json:"hooks"`
	// Compat says why the compat BPF build is used (kernels before 5.17).
	Compat []string `json:"compat_build,omitempty"`
	// Unavailable lists the record fields this kernel cannot give.
	Unavailable []string `json:"unavailable,omitempty"`
	Problems    []string `json:"problems,omitempty"`
	RequiredOK  bool     `json:"required_ok"`
}

// Doctor checks privileges, BTF and tracefs, then probes every hook as
// Start does, with force preferring mechanisms per hook.
func Doctor(force map[string]Mechanism) *DoctorReport {
	var u unix.Utsname
	_ = unix.Uname(&u)
	r := &DoctorReport{
		Kernel:  unix.ByteSliceToString(u.Release[:]),
		Machine: unix.ByteSliceToString(u.Machine[:]),
		Root:    os.Geteuid() == 0,
	}
	if _, err := os.Stat("/sys/kernel/btf/vmlinux"); err == nil {
		r.BTF = true
	}
	if !r.Root {
		r.Problems = append(r.Problems, ErrNotRoot.Error())
		return r
	}
	if !r.BTF {
		r.Problems = append(r.Problems, ErrNoBTF.Error())
		return r
	}
	r.Tracefs = TracefsDir()
	if r.Tracefs == "" {
		r.Problems = append(r.Problems, "tracefs is not mounted and could not be mounted: mount -t tracefs tracefs /sys/kernel/tracing")
	}
	_, err := os.Stat("/sys/bus/event_source/devices/kprobe")
	r.Kprobes = err == nil
	r.Preempt, _ = preemptModel()
	r.Spares = sparesWhen(r.Preempt)
	hooks, err := Probe(force)
	if err != nil {
		r.Problems = append(r.Problems, err.Error())
		return r
	}
	r.Hooks = hooks
	r.Compat = CompatReasons()
	r.Unavailable = Unavailable(hooks)
	r.RequiredOK = true
	for _, h := range hooks {
		if h.Mechanism == None && h.Loses == "" {
			r.RequiredOK = false
			r.Problems = append(r.Problems, fmt.Sprintf("required hook %s cannot attach: %s", h.Hook, strings.Join(h.Rejected, "; ")))
		}
	}
	return r
}

// WriteText prints the report as `iopath doctor` shows it.
func (r *DoctorReport) WriteText(w io.Writer) {
	fmt.Fprintf(w, "kernel:   Linux %s %s\n", r.Kernel, r.Machine)
	fmt.Fprintf(w, "BTF:      %s (/sys/kernel/btf/vmlinux)\n", yesno(r.BTF))
	fmt.Fprintf(w, "root:     %s\n", yesno(r.Root))
	if r.Root && r.BTF {
		fmt.Fprintf(w, "tracefs:  %s\n", r.Tracefs)
		fmt.Fprintf(w, "kprobes:  %s\n", yesno(r.Kprobes))
		model := r.Preempt
		if model == "" {
			model = "unknown (no debugfs sched/preempt, preempt= or kernel config)"
		}
		fmt.Fprintf(w, "preempt:  %s; spare programs %s\n", model, r.Spares)
	} else {
		// Not probed: the checks stop at the first problem below.
		fmt.Fprintln(w, "tracefs:  not checked")
		fmt.Fprintln(w, "kprobes:  not checked")
	}
	if len(r.Hooks) > 0 {
		fmt.Fprintln(w, "\nhooks (mechanism chosen; better ones that were refused, and why):")
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		for _, h := range r.Hooks {
			what := strings.Join(h.Targets, ", ")
			if h.Mechanism == None {
				what = "unavailable: no " + h.Loses
			}
			if h.Variant != "" {
				what += " (" + h.Variant + ")"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", h.Hook, h.Mechanism, what)
			for _, rej := range h.Rejected {
				fmt.Fprintf(tw, "  \t\t  refused %s\n", rej)
			}
		}
		tw.Flush()
		switch fields, traced := FaultUnavailable(r.Hooks); {
		case !traced:
			fmt.Fprintln(w, "\nfault records: not traced (see fault_entry, fault_end above)")
		case len(fields) > 0:
			fmt.Fprintf(w, "\nfault records: unavailable on this kernel: %s\n", strings.Join(fields, ", "))
		default:
			fmt.Fprintln(w, "\nfault records: every field available")
		}
	}
	// Both lines appear only where they apply (older kernels).
	if len(r.Compat) > 0 {
		fmt.Fprintf(w, "\nbpf build: compat (%s)\n", strings.Join(r.Compat, "; "))
	}
	if len(r.Unavailable) > 0 {
		fmt.Fprintf(w, "\nunavailable on this kernel: %s\n", strings.Join(r.Unavailable, ", "))
	}
	if len(r.Problems) > 0 {
		fmt.Fprintln(w, "\nproblems:")
		for _, p := range r.Problems {
			fmt.Fprintln(w, "  - "+p)
		}
	} else {
		fmt.Fprintln(w, "\nready: every required hook attaches")
	}
}

func yesno(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
