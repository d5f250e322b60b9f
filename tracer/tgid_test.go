package tracer

import (
	"os"
	"strconv"
	"testing"
)

// Every thread of this process maps to its pid; an unknown id to itself.
func TestTgid(t *testing.T) {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range tasks {
		tid, _ := strconv.Atoi(e.Name())
		if g := Tgid(tid); g != os.Getpid() {
			t.Errorf("Tgid(%d) = %d, want %d", tid, g, os.Getpid())
		}
	}
	if g := Tgid(1<<22 + 1); g != 1<<22+1 {
		t.Errorf("Tgid of no process = %d", g)
	}
}
