package timeline

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckApart(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a")
	if err := os.WriteFile(a, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Link(a, link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ output, trace, report, want string }{
		{a, dir + "/./a", "", "-o and --timeline both name " + a},
		{a, "", link, "-o and --report both name " + a}, // one inode
		{a, filepath.Join(dir, "b"), "", ""},
		{"", a, a, ""},
	} {
		err := CheckApart(c.output, c.trace, c.report)
		if (c.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("CheckApart(%q, %q, %q) = %v, want %q", c.output, c.trace, c.report, err, c.want)
		}
	}
}
