package tracer

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/features"
	"github.com/iopath/iopath/bpf"
)

// CompatReasons says why this kernel needs the compat BPF build
// (bpf/compat.h): the verifier features the main build uses that a probe
// found missing. Empty: the main build loads. IOPATH_COMPAT=1 forces the
// compat build anywhere (tests).
func CompatReasons() []string {
	var why []string
	if err := features.HaveProgramHelper(ebpf.Kprobe, asm.FnLoop); err != nil {
		why = append(why, "no bpf_loop helper (5.17+): "+probeVerdict(err))
	}
	if err := haveAtomicFetch(); err != nil {
		why = append(why, "no atomic fetch-and-add (5.12+): "+probeVerdict(err))
	}
	if len(why) == 0 && os.Getenv("IOPATH_COMPAT") != "" {
		why = append(why, "IOPATH_COMPAT is set")
	}
	return why
}

func probeVerdict(err error) string {
	if errors.Is(err, ebpf.ErrNotSupported) {
		return "refused"
	}
	return "probe inconclusive: " + shortErr(err)
}

// haveAtomicFetch loads a socket filter doing one atomic fetch-and-add on
// its stack (BPF_ATOMIC | BPF_FETCH, Linux 5.12).
func haveAtomicFetch() error {
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.SocketFilter, License: "GPL", Instructions: asm.Instructions{
		asm.Mov.Imm(asm.R1, 0),
		asm.StoreMem(asm.RFP, -8, asm.R1, asm.DWord),
		asm.Mov.Reg(asm.R1, asm.RFP),
		asm.Add.Imm(asm.R1, -8),
		asm.Mov.Imm(asm.R2, 1),
		asm.FetchAdd.Mem(asm.R1, asm.R2, asm.DWord, 0),
		asm.Mov.Imm(asm.R0, 0),
		asm.Return(),
	}})
	if err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			return fmt.Errorf("%w: %s", ebpf.ErrNotSupported, strings.TrimSpace(verifierSummary(ve)))
		}
		return err
	}
	return prog.Close()
}

// loadSpec returns the BPF object to load: the main build, or the compat
// build when CompatReasons says so (then also the reasons).
func loadSpec() (*ebpf.CollectionSpec, []string, error) {
	why := CompatReasons()
	if len(why) == 0 {
		spec, err := bpf.LoadIopath()
		return spec, nil, err
	}
	spec, err := bpf.LoadIopathCompat()
	if err != nil {
		return nil, why, err
	}
	n, err := ebpf.PossibleCPU()
	if err != nil {
		return nil, why, fmt.Errorf("counting CPUs for the compat build: %w", err)
	}
	if err := spec.Variables["nr_cpus"].Set(uint32(n)); err != nil {
		return nil, why, fmt.Errorf("setting nr_cpus: %w", err)
	}
	return spec, why, nil
}
