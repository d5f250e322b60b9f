package metrics

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
)

// Listen opens addr (iopath serve --listen), or says in one line why not, with the fix that
// matches the cause: a host that is no address of this machine, a port in
// use, a privileged port, or a malformed HOST:PORT.
func Listen(addr string) (net.Listener, error) {
	if addr == "" {
		// net.Listen takes "" as every interface on a random port: not
		// what an empty value (an unset shell variable) asked for.
		return nil, errors.New("--listen is empty: give HOST:PORT, e.g. --listen 127.0.0.1:9465 (the default), or :9465 for every interface")
	}
	if err := checkPort(addr); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err == nil {
		return ln, nil
	}
	cause := err
	if u := errors.Unwrap(err); u != nil {
		cause = u
	}
	hint := "give HOST:PORT, e.g. --listen 127.0.0.1:9465"
	var dns *net.DNSError
	var ae *net.AddrError
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		hint = "the port is in use: give a free port, e.g. --listen 127.0.0.1:9466"
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		hint = "the host is not an address of this machine: give one of its addresses, or 0.0.0.0 for all"
	case errors.Is(err, syscall.EACCES):
		hint = "ports below 1024 need CAP_NET_BIND_SERVICE: give a port of 1024 or more"
	case errors.As(err, &dns):
		hint = "the host is neither an IP address nor a known name: give an address of this machine, e.g. --listen 127.0.0.1:9465"
	case errors.As(err, &ae):
		hint = "give HOST:PORT with a port of 0 to 65535, e.g. --listen 127.0.0.1:9465"
	}
	return nil, fmt.Errorf("--listen %s: %w: %s", addr, cause, hint)
}

// checkPort refuses a port that is neither a number nor a service name
// (/etc/services): net.Listen reports it as a failed lookup ("lookup
// tcp/abc: unknown port"), which reads as if the host were wrong.
func checkPort(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port == "" || strings.Trim(port, "0123456789") == "" {
		return nil // a malformed address or a number: net.Listen says what is wrong
	}
	if _, err := net.LookupPort("tcp", port); err == nil {
		return nil
	}
	return fmt.Errorf("--listen %s: port %q is not a number: give HOST:PORT with a port of 0 to 65535, e.g. --listen %s",
		addr, port, net.JoinHostPort(host, "9465"))
}
