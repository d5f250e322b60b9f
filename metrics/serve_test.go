package metrics

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/iopath/iopath/aggregate"
)

// The server's paths: /metrics with the collector's families, /healthz,
// / naming both, anything else 404.
func TestHandler(t *testing.T) {
	s := &aggregate.Snapshot{At: time.Unix(1, 0), Procs: map[uint32]*aggregate.Proc{}, Files: map[aggregate.FileKey]*aggregate.File{},
		Devices: map[aggregate.DevKey]*aggregate.Device{}, RetiredByComm: map[string]*aggregate.IO{}}
	s.Retired.Calls[aggregate.Write] = 5
	srv := httptest.NewServer(handler(New(func() (*aggregate.Snapshot, error) { return s, nil }, nil, nil)))
	defer srv.Close()
	for _, c := range []struct {
		path, want string
		code       int
	}{
		{"/metrics", "iopath_syscalls_total{op=\"write\"} 5\n", 200},
		{"/healthz", "ok\n", 200},
		{"/", "iopath: metrics at /metrics, health at /healthz\n", 200},
		{"/nope", "404 page not found\n", 404},
	} {
		resp, err := http.Get(srv.URL + c.path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.code || !strings.Contains(string(b), c.want) {
			t.Errorf("GET %s: %d %q, want %d with %q", c.path, resp.StatusCode, b, c.code, c.want)
		}
	}
}
