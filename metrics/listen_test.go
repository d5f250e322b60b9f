package metrics

import (
	"strings"
	"testing"

	"github.com/iopath/iopath/internal/testutil"
)

// TestListenHints: a bad --listen names its cause, and the fix matches it
// (a bad host is not told to pick a free port).
func TestListenHints(t *testing.T) {
	// In the VMs (no network configured) binding a documentation address
	// was accepted: which addresses are this machine's is the host's question.
	testutil.KernelIndependent(t)
	busy, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	for addr, want := range map[string]string{
		"999.1.1.1:80":       "the host is neither an IP address nor a known name",
		busy.Addr().String(): "the port is in use",
		"192.0.2.1:9465":     "the host is not an address of this machine",
		"127.0.0.1:99999":    "port of 0 to 65535",
		":abc":               `--listen :abc: port "abc" is not a number: give HOST:PORT with a port of 0 to 65535, e.g. --listen :9465`,
		"[::1]:x9":           `port "x9" is not a number`,
		"":                   "--listen is empty: give HOST:PORT",
	} {
		ln, err := Listen(addr)
		if err == nil {
			ln.Close()
			t.Errorf("--listen %s accepted", addr)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, want) || strings.Count(msg, "\n") > 0 {
			t.Errorf("--listen %s: %q, want one line with %q", addr, msg, want)
		}
	}
}
