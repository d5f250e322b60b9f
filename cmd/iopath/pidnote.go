package main

import (
	"strconv"
	"strings"
)

// pidNote says on stderr what -p follows: the process, its threads and
// the children it forks from now on; not processes other ones fork (a
// database's workers are often forked by its postmaster, not by the
// backend one traces).
func pidNote(pids []int) string {
	ps := make([]string, len(pids))
	for i, p := range pids {
		ps[i] = strconv.Itoa(p)
	}
	return "iopath: -p follows children of PID " + strings.Join(ps, ",") +
		"; processes forked by others are not traced: use --comm or -p of the parent"
}
