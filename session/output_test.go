package session

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// -o: a file the run created is removed when the run failed before
// writing; one that existed stays; stdout is passed through.
func TestOutput(t *testing.T) {
	dir := t.TempDir()
	created := filepath.Join(dir, "new")
	w, shared, done, err := Output(nil, created, nil, true)
	if err != nil || shared != nil {
		t.Fatalf("Output(%s): %v, shared %v", created, err, shared)
	}
	if _, ok := w.(*os.File); !ok {
		t.Errorf("-o gave a %T, want the file", w)
	}
	done(errors.New("failed"))
	if _, err := os.Stat(created); !os.IsNotExist(err) {
		t.Errorf("an empty -o file of a failed run stays: %v", err)
	}
	existing := filepath.Join(dir, "old")
	if err := os.WriteFile(existing, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, done, err = Output(nil, existing, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	done(errors.New("failed"))
	if _, err := os.Stat(existing); err != nil {
		t.Errorf("an -o file that existed was removed: %v", err)
	}
	var buf bytes.Buffer
	w, shared, _, err = Output(nil, "", &buf, true)
	if err != nil || w != &buf || shared != nil {
		t.Errorf("Output without -o: %v, %v, %v; want the writer given", w, shared, err)
	}
	if _, _, _, err := Output(nil, filepath.Join(dir, "no", "such"), nil, false); err == nil {
		t.Error("-o in a missing directory was accepted")
	}
}
