package workloads

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
)

// RunReported is `iopath workload KIND`: it prepares spec's file (spec
// validated), runs
// the workload until it is done or ctx ends (SIGINT/SIGTERM: it still
// reports what it did, and interrupted is true), removes what it created
// (with spec.Keep it says on notes what it kept) and writes the report to
// out, as JSON with asJSON.
func RunReported(ctx context.Context, spec Spec, out, notes io.Writer, asJSON bool) (interrupted bool, err error) {
	p, err := Prepare(spec)
	if err != nil {
		return false, err
	}
	rep, runErr := p.Run(ctx)
	cleanErr := p.Cleanup()
	if runErr != nil {
		return false, runErr
	}
	if asJSON {
		err = rep.WriteJSON(out)
	} else {
		err = rep.WriteText(out)
	}
	if err != nil {
		return false, err
	}
	if cleanErr != nil {
		return false, fmt.Errorf("cleaning up %s: %w", p.Path, cleanErr)
	}
	if spec.Keep {
		fmt.Fprintf(notes, "kept %s\n", p.Path)
	}
	return rep.Interrupted, nil
}

// WriteJSON writes the report as indented JSON (units in the field
// names: _ns, _bytes, _mib_s).
func (r *Report) WriteJSON(w io.Writer) error {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(r)
}
