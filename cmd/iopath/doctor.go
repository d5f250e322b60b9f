package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/iopath/iopath/tracer"
	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"
)

func init() { subcommands = append(subcommands, newDoctorCmd) }

// doctorReport is what `iopath doctor` prints (also as JSON).
type doctorReport struct {
	Kernel  string              `json:"kernel"`
	Machine string              `json:"machine"`
	BTF     bool                `json:"btf"`
	Root    bool                `json:"root"`
	Tracefs string              `json:"tracefs"`
	Kprobes bool                `json:"kprobes"`
	Hooks   []tracer.HookStatus `json:"hooks"`
	// Compat says why the compat BPF build is used (kernels before 5.17).
	Compat []string `json:"compat_build,omitempty"`
	// Unavailable lists the record fields this kernel cannot give.
	Unavailable []string `json:"unavailable,omitempty"`
	Problems    []string `json:"problems,omitempty"`
	RequiredOK  bool     `json:"required_ok"`
}

func newDoctorCmd() *cobra.Command {
	var asJSON bool
	var force map[string]string
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check the kernel and say which mechanism each hook will use",
		Long: `Check privileges, BTF and tracefs, then probe every hook the way 'trace' does
(a BTF lookup plus a real test attach for fentry and kprobe) and print the
mechanism chosen for each, or why none works and what is lost.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkForce(force); err != nil {
				return err
			}
			fm := map[string]tracer.Mechanism{}
			for k, v := range force {
				fm[k] = tracer.Mechanism(v)
			}
			r := runDoctor(fm)
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				enc.Encode(r)
			} else {
				printDoctor(cmd.OutOrStdout(), r)
			}
			if !r.RequiredOK {
				return exitError{code: 1}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	cmd.Flags().StringToStringVar(&force, "force-mechanism", nil, "prefer a mechanism for a hook: HOOK=fentry|kprobe|tracepoint|tp_btf (HOOK * for all)")
	return cmd
}

func runDoctor(force map[string]tracer.Mechanism) *doctorReport {
	var u unix.Utsname
	_ = unix.Uname(&u)
	r := &doctorReport{
		Kernel:  unix.ByteSliceToString(u.Release[:]),
		Machine: unix.ByteSliceToString(u.Machine[:]),
		Root:    os.Geteuid() == 0,
	}
	if _, err := os.Stat("/sys/kernel/btf/vmlinux"); err == nil {
		r.BTF = true
	}
	if !r.Root {
		r.Problems = append(r.Problems, tracer.ErrNotRoot.Error())
		return r
	}
	if !r.BTF {
		r.Problems = append(r.Problems, tracer.ErrNoBTF.Error())
		return r
	}
	r.Tracefs = tracer.TracefsDir()
	if r.Tracefs == "" {
		r.Problems = append(r.Problems, "tracefs is not mounted and could not be mounted: mount -t tracefs tracefs /sys/kernel/tracing")
	}
	_, err := os.Stat("/sys/bus/event_source/devices/kprobe")
	r.Kprobes = err == nil
	hooks, err := tracer.Probe(force)
	if err != nil {
		r.Problems = append(r.Problems, err.Error())
		return r
	}
	r.Hooks = hooks
	r.Compat = tracer.CompatReasons()
	r.Unavailable = tracer.Unavailable(hooks)
	r.RequiredOK = true
	for _, h := range hooks {
		if h.Mechanism == tracer.None && h.Loses == "" {
			r.RequiredOK = false
			r.Problems = append(r.Problems, fmt.Sprintf("required hook %s cannot attach: %s", h.Hook, strings.Join(h.Rejected, "; ")))
		}
	}
	return r
}

func yesno(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func printDoctor(w io.Writer, r *doctorReport) {
	fmt.Fprintf(w, "kernel:   Linux %s %s\n", r.Kernel, r.Machine)
	fmt.Fprintf(w, "BTF:      %s (/sys/kernel/btf/vmlinux)\n", yesno(r.BTF))
	fmt.Fprintf(w, "root:     %s\n", yesno(r.Root))
	if r.Root && r.BTF {
		fmt.Fprintf(w, "tracefs:  %s\n", r.Tracefs)
		fmt.Fprintf(w, "kprobes:  %s\n", yesno(r.Kprobes))
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
			if h.Mechanism == tracer.None {
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
