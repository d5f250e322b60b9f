package main

import (
	"errors"
	"strings"
	"testing"
)

// Breaker: when -o and --timeline both failed (ulimit -f), the second
// line of the joined error lacked the "iopath: " prefix.
func TestSayErrorPrefixesEveryLine(t *testing.T) {
	var b strings.Builder
	sayError(&b, errors.Join(errors.New("writing -o o.txt: file too large"), errors.New("writing --timeline t.json: file too large")))
	if want := "iopath: writing -o o.txt: file too large\niopath: writing --timeline t.json: file too large\n"; b.String() != want {
		t.Errorf("said %q, want %q", b.String(), want)
	}
}
