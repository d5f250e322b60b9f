package metrics

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/iopath/iopath/aggregate"
	"github.com/iopath/iopath/session"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// ServeOptions configure Serve.
type ServeOptions struct {
	PerComm   []string  // command names with per-process series (--per-comm)
	Notes     io.Writer // iopath's own lines (stderr)
	ReadyFile string    // created once serving (--ready-file), removed at the end
}

// Serve serves the aggregates of s on ln: /metrics (read at each scrape),
// /healthz ("ok"). After the first SIGINT or SIGTERM of sig it stops (open
// scrapes get 5 s to finish) and returns session.Interrupted, so that
// iopath exits 130 or 143 as for every command; else it returns why
// serving or the tracer failed.
func Serve(ln net.Listener, s *session.Session, sig *session.Signals, o ServeOptions) error {
	col := New(aggregate.NewReader(s.T.AggMaps()).Read, o.PerComm, s.T.Counters)
	col.Missed = s.T.ProgramMisses
	srv := &http.Server{Handler: handler(col), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Fprintf(o.Notes, "iopath: serving metrics on http://%s/metrics\n", ln.Addr())
	removeReady, err := session.ReadyFile(o.ReadyFile, o.Notes)
	if err != nil {
		srv.Close()
		return err
	}
	defer removeReady()
	select {
	case <-sig.Fired():
		fmt.Fprintf(o.Notes, "iopath: %s: stopping the server\n", sig.Signal())
	case err := <-served:
		return fmt.Errorf("serving on %s: %w", ln.Addr(), err)
	case <-s.Failed():
		srv.Close()
		_, err := s.End()
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		srv.Close()
	}
	return session.Interrupted{Signal: sig.Signal()}
}

// handler serves col's metrics at /metrics (a family that fails to read
// is left out, the others still served), "ok" at /healthz and a line
// naming both at /.
func handler(col prometheus.Collector) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(col)
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintln(w, "iopath: metrics at /metrics, health at /healthz")
	})
	return mux
}
