package tracer

import (
	"os"
	"strconv"
	"strings"
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

func TestTaskComm(t *testing.T) {
	pid := uint32(os.Getpid())
	c := taskComm(pid, pid)
	b, err := os.ReadFile("/proc/self/comm")
	if err != nil {
		t.Fatal(err)
	}
	var want [16]int8
	for i, x := range strings.TrimSuffix(string(b), "\n") {
		want[i] = int8(x)
	}
	if c != want {
		t.Errorf("taskComm(self) = %v, want %v", c, want)
	}
	if c := taskComm(1<<22+1, 1<<22+1); c != ([16]int8{}) {
		t.Errorf("taskComm of no process = %v", c)
	}
}
