// Command floor attaches two empty BPF programs to the raw_syscalls
// sys_enter and sys_exit tracepoints (tp_btf, iopath's mechanism for the
// call hooks on a kernel without fentry) and holds them until SIGINT or
// SIGTERM: the cost of any syscall-tracepoint tracer before it does any
// work (registering the tracepoint puts every task's system calls on the
// slow path). scripts/bench.sh measures it beside iopath ("floor"). It
// prints "Attaching 2 programs" once both are attached.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
}

func run() error {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	if err := rlimit.RemoveMemlock(); err != nil {
		return err
	}
	for _, tp := range []string{"sys_enter", "sys_exit"} {
		prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
			Name: "floor_" + tp, Type: ebpf.Tracing, AttachType: ebpf.AttachTraceRawTp, AttachTo: tp,
			Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()}, License: "GPL",
		})
		if err != nil {
			return fmt.Errorf("loading an empty tp_btf/%s program: %w (run as root)", tp, err)
		}
		defer prog.Close()
		l, err := link.AttachTracing(link.TracingOptions{Program: prog})
		if err != nil {
			return fmt.Errorf("attaching tp_btf/%s: %w", tp, err)
		}
		defer l.Close()
	}
	fmt.Println("Attaching 2 programs")
	<-sig
	return nil
}
