package main

import (
	"encoding/json"

	"github.com/iopath/iopath/session"
	"github.com/iopath/iopath/tracer"
	"github.com/spf13/cobra"
)

func init() { subcommands = append(subcommands, newDoctorCmd) }

func newDoctorCmd() *cobra.Command {
	var asJSON bool
	var force map[string]string
	cmd := &cobra.Command{
		Use:   "doctor",
		Args:  cobra.NoArgs,
		Short: "Check the kernel and say which mechanism each hook will use",
		Long: `Check privileges, BTF and tracefs, then probe every hook the way 'trace' does
(a BTF lookup plus a real test attach for fentry and kprobe) and print the
mechanism chosen for each, or why none works and what is lost.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			// A SIGINT/SIGTERM (also one before this line: internal/earlysig
			// kept it) ends doctor with 128+N and no report, as every command.
			sig := session.Catch()
			defer sig.Stop()
			fm, err := tracer.ParseForce(force)
			if err != nil {
				return err
			}
			r := tracer.Doctor(fm)
			if s := sig.Signal(); s != 0 {
				return session.Interrupted{Signal: s}
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				enc.Encode(r)
			} else {
				r.WriteText(cmd.OutOrStdout())
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
