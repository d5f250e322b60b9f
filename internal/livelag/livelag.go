// Package livelag measures live delivery of `iopath trace --json`: how long
// after a call's last event its record reaches the reader of iopath's
// stdout, and iopath's resident memory meanwhile. The integration test
// TestTracePgbenchLive and scripts/livelag (`make bench`) share it.
package livelag

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// MonotonicNs is CLOCK_MONOTONIC in ns, the clock of the records' times
// (bpf_ktime_get_ns).
func MonotonicNs() uint64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return uint64(ts.Nano())
}

// call is the part of a call record the lag needs; encoding/json skips the
// other fields without building them.
type call struct {
	Type       string `json:"type"`
	TimeNs     uint64 `json:"time_ns"`
	DurationNs uint64 `json:"duration_ns"`
	Bios       []struct {
		CompleteNs        uint64 `json:"complete_ns"`
		CompletedBeforeNs uint64 `json:"completed_before_ns"`
	} `json:"bios"`
}

// line is one line of the stream and the time it was read.
type line struct {
	at uint64
	b  []byte
}

// Result is the lag of every call record of a stream, sorted, in ns.
type Result struct {
	Lags  []uint64 // read time − the call's last event, ascending
	Lines int      // lines read (records of every type, summary included)
}

// Quantile is the q-quantile (0 ≤ q ≤ 1) of the lags, ns (0 without any).
func (r Result) Quantile(q float64) uint64 {
	if len(r.Lags) == 0 {
		return 0
	}
	return r.Lags[min(len(r.Lags)-1, int(q*float64(len(r.Lags))))]
}

// Read reads a --json stream until EOF. Each line is stamped as it is read
// and handed to a decoding goroutine through a deep channel, so that
// decoding never holds back the pipe (which would itself delay iopath's
// writes and show as lag). A call record's lag is its read time minus the
// latest of its return (time_ns + duration_ns) and its bios' completions
// (complete_ns, or completed_before_ns where the completion was inferred):
// a record is due once its call returned and its last bio completed.
func Read(r io.Reader) (Result, error) { return readAt(r, MonotonicNs) }

// readAt is Read with the clock that stamps each line (a fixed one in tests:
// a lag measured with the real clock depends on how fast the test runs).
func readAt(r io.Reader, now func() uint64) (Result, error) {
	lines := make(chan line, 1<<16)
	type out struct {
		res Result
		err error
	}
	done := make(chan out, 1)
	go func() {
		var o out
		for l := range lines {
			o.res.Lines++
			if o.err != nil || len(l.b) == 0 || l.b[0] != '{' {
				continue
			}
			var c call
			if err := json.Unmarshal(l.b, &c); err != nil {
				o.err = fmt.Errorf("bad JSON line %.200q: %w", l.b, err)
				continue
			}
			if c.Type != "syscall" {
				continue
			}
			end := c.TimeNs + c.DurationNs
			for _, b := range c.Bios {
				end = max(end, b.CompleteNs, b.CompletedBeforeNs)
			}
			o.res.Lags = append(o.res.Lags, l.at-min(l.at, end))
		}
		slices.Sort(o.res.Lags)
		done <- o
	}()
	br := bufio.NewReaderSize(r, 1<<20)
	var rerr error
	for {
		b, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A line longer than the buffer: gather it whole.
			whole := append([]byte(nil), b...)
			for errors.Is(err, bufio.ErrBufferFull) {
				b, err = br.ReadSlice('\n')
				whole = append(whole, b...)
			}
			b = whole
		} else {
			b = append([]byte(nil), b...)
		}
		if len(b) > 0 {
			lines <- line{now(), b}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				rerr = err
			}
			break
		}
	}
	close(lines)
	o := <-done
	if rerr != nil {
		return o.res, rerr
	}
	return o.res, o.err
}

// RSS is a series of VmRSS samples of one process, KiB.
type RSS struct {
	Every   time.Duration
	Samples []uint64
}

// SampleRSS reads /proc/PID/status's VmRSS every period until stop is
// closed or the process is gone, then sends the series on the returned
// channel.
func SampleRSS(pid int, every time.Duration, stop <-chan struct{}) <-chan RSS {
	res := make(chan RSS, 1)
	go func() {
		s := RSS{Every: every}
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				res <- s
				return
			case <-tick.C:
				v, ok := vmRSS(pid)
				if !ok {
					res <- s
					return
				}
				s.Samples = append(s.Samples, v)
			}
		}
	}()
	return res
}

// MaxIn is the largest sample taken in [from, to) after sampling began
// (to ≤ 0: until the end), KiB.
func (s RSS) MaxIn(from, to time.Duration) uint64 {
	i, j := min(len(s.Samples), int(from/s.Every)), len(s.Samples)
	if to > 0 {
		j = min(j, int(to/s.Every))
	}
	return maxOf(s.Samples[i:max(i, j)])
}

// MaxLast is the largest sample of the last d of the series, KiB.
func (s RSS) MaxLast(d time.Duration) uint64 {
	n := min(len(s.Samples), int(d/s.Every))
	return maxOf(s.Samples[len(s.Samples)-n:])
}

func maxOf(v []uint64) uint64 {
	if len(v) == 0 {
		return 0
	}
	return slices.Max(v)
}

// vmRSS reads VmRSS (KiB) of a process; false once it is gone.
func vmRSS(pid int) (uint64, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, false
	}
	for l := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			n, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n, err == nil
		}
	}
	return 0, false // a zombie has no VmRSS line
}
