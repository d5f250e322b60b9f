package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/iopath/iopath/session"
	"github.com/iopath/iopath/timeline"
	"github.com/iopath/iopath/tracer"
)

// minInterval is the shortest --interval of top and trace: each one reads
// every aggregate map.
const minInterval = 10 * time.Millisecond

// checkTraceFlags refuses flag values that would trace nothing or wrongly,
// and converts --force-mechanism.
func checkTraceFlags(cmd *cobra.Command, f *traceFlags) (err error) {
	if err := tracer.CheckRingBufBytes(f.ringbuf); err != nil {
		return err
	}
	if err := tracer.CheckMaxDirtyPages(f.maxDirty); err != nil {
		return err
	}
	for _, d := range []struct {
		flag, example string
		v             time.Duration
	}{{"--duration", "10s, or 0 for no limit", f.duration}, {"--settle", "2s, or 0 not to wait", f.settle},
		{"--wait-writeback", "40s", f.waitWriteback}, {"--interval", "1s, or 0 for none", f.interval}} {
		if d.v < 0 {
			return fmt.Errorf("%s %s is negative: give a duration of 0 or more, e.g. %s %s", d.flag, d.v, d.flag, d.example)
		}
	}
	if f.interval > 0 && f.interval < minInterval {
		return fmt.Errorf("--interval %s is too short: give %s or more, e.g. --interval 1s, or 0 for none", f.interval, minInterval)
	}
	if f.files < 0 {
		return fmt.Errorf("--files %d is negative: give 0 (every file) or more, e.g. --files 200", f.files)
	}
	if err := session.CheckReadyFile(f.readyFile); err != nil {
		return err
	}
	if err := timeline.CheckOutputs(cmd.OutOrStdout(), cmd.ErrOrStderr(), outputFlag(cmd, "output", f.output),
		outputFlag(cmd, "timeline", f.timeline.trace), outputFlag(cmd, "report", f.timeline.report), outputFlag(cmd, "ready-file", f.readyFile)); err != nil {
		return err
	}
	if err := session.CheckOutputTarget(f.output); err != nil {
		return err // before the --timeline/--report files are made
	}
	f.mechanisms, err = tracer.ParseForce(f.force)
	return err
}

// outputFlag is flag name (long) of cmd naming path, for
// timeline.CheckOutputs.
func outputFlag(cmd *cobra.Command, name, path string) timeline.Named {
	flag := "--" + name
	if name == "output" {
		flag = "-o"
	}
	return timeline.Named{Flag: flag, Path: path, Given: cmd.Flags().Changed(name)}
}
