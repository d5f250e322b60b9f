package tracer

import "testing"

// commWords gives comm_matches (bpf/helpers.h) the name's bytes and its
// NUL: a task comm matches when those bytes are equal, so "fio" matches
// "fio" but neither "fio2" (its 4th byte is not NUL) nor "fi".
func TestCommWords(t *testing.T) {
	match := func(name, comm string) bool {
		lo, hi, mlo, mhi := commWords(name)
		clo, chi, _, _ := commWords(comm)
		return clo&mlo == lo && chi&mhi == hi
	}
	for _, c := range []struct {
		name, comm string
		want       bool
	}{
		{"fio", "fio", true}, {"fio", "fio2", false}, {"fio", "fi", false}, {"fio", "gio", false},
		{"abcdefghijklmno", "abcdefghijklmno", true}, {"abcdefghijklmno", "abcdefghijklmnx", false},
		{"abcdefgh", "abcdefgh", true}, {"abcdefgh", "abcdefghi", false}, {"abcdefg", "abcdefgh", false},
	} {
		if got := match(c.name, c.comm); got != c.want {
			t.Errorf("--comm %q, task comm %q: match %v, want %v", c.name, c.comm, got, c.want)
		}
	}
	// Bytes after the NUL (a kernel before 5.17 may leave them) are ignored.
	lo, _, mlo, _ := commWords("fio")
	if stale := uint64('f') | uint64('i')<<8 | uint64('o')<<16 | uint64('x')<<32; stale&mlo != lo {
		t.Error("a stale byte after the NUL changed the match")
	}
}
