package tracer

import "testing"

// Where the kernel preempts tracing programs, choose tries the candidates
// whose runs a preempted thread cannot make the kernel skip first, each
// group in its own order; the read, write and fault-entry hooks have one.
func TestUnpreemptedFirst(t *testing.T) {
	c := []candidate{{mech: Fentry}, {mech: Kprobe}, {mech: TPBTF, unpreempted: true}, {mech: Tracepoint}}
	got := unpreemptedFirst(c)
	want := []Mechanism{TPBTF, Fentry, Kprobe, Tracepoint}
	for i, g := range got {
		if g.mech != want[i] {
			t.Fatalf("order %v, want %v", mechs(got), want)
		}
	}
	for _, h := range Hooks() {
		n := 0
		for _, c := range h.candidates {
			if c.unpreempted {
				n++
			}
		}
		want := 0
		if h.Name == "vfs_read" || h.Name == "vfs_write" || h.Name == "fault_entry" {
			want = 1
		}
		if n != want {
			t.Errorf("%s: %d unpreempted candidates, want %d", h.Name, n, want)
		}
	}
}

func mechs(c []candidate) []Mechanism {
	var out []Mechanism
	for _, x := range c {
		out = append(out, x.mech)
	}
	return out
}
