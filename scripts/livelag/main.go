// Command livelag reads `iopath trace --json` from its standard input (a
// pipe, as a live consumer reads it) and reports how late the call records
// arrive: per record, the CLOCK_MONOTONIC time the line was read minus the
// latest of the call's return and its bios' completions (internal/livelag).
// With --rss-pid it samples that process's VmRSS every 200 ms meanwhile.
// scripts/bench.sh runs it for its "live delivery under pgbench" row. It
// prints one line of key=value pairs (lag in ms, RSS in KiB) at EOF:
//
//	records=N lines=N lag_p50_ms=F lag_p99_ms=F lag_max_ms=F rss_max_kib=N rss_first10s_kib=N rss_last10s_kib=N
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/iopath/iopath/internal/livelag"
)

func main() {
	pid := flag.Int("rss-pid", 0, "process whose VmRSS to sample every 200 ms (iopath's pid); 0: none")
	flag.Parse()
	if flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "livelag: no arguments expected: pipe `iopath trace --json` into it")
		os.Exit(2)
	}
	stop := make(chan struct{})
	var rss <-chan livelag.RSS
	if *pid > 0 {
		rss = livelag.SampleRSS(*pid, 200*time.Millisecond, stop)
	}
	res, err := livelag.Read(os.Stdin)
	close(stop)
	if err != nil {
		fmt.Fprintf(os.Stderr, "livelag: reading the --json stream: %v\n", err)
		os.Exit(1)
	}
	ms := func(q float64) string { return fmt.Sprintf("%.1f", float64(res.Quantile(q))/1e6) }
	fmt.Printf("records=%d lines=%d lag_p50_ms=%s lag_p99_ms=%s lag_max_ms=%s", len(res.Lags), res.Lines, ms(0.5), ms(0.99), ms(1))
	if rss != nil {
		s := <-rss
		fmt.Printf(" rss_max_kib=%d rss_first10s_kib=%d rss_last10s_kib=%d", s.MaxIn(0, 0), s.MaxIn(0, 10*time.Second), s.MaxLast(10*time.Second))
	}
	fmt.Println()
}
