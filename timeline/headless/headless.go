// Package headless loads a page in a headless Chromium (Debian's
// `chromium` package) for tests: the DOM after its scripts ran, the console
// messages it logged, and a screenshot.
package headless

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// Find returns the chromium binary, or an error saying how to install it.
func Find() (string, error) {
	for _, n := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("chromium not found: install it (apt-get install chromium, as scripts/setup.sh does)")
}

// Check says whether tests can load pages here: skip is the reason to
// skip (no chromium, and not required), err the reason to fail (no
// chromium on a CI host, where scripts/setup.sh installs it). Under
// scripts/vmtest.sh (IOPATH_VM=1) the guest has no browser: the host's run
// covers these tests.
func Check() (skip string, err error) {
	_, err = Find()
	switch {
	case err == nil:
		return "", nil
	case os.Getenv("IOPATH_VM") == "1":
		return "no browser in the test VM (the host run loads the pages): " + err.Error(), nil
	case os.Getenv("CI") != "":
		return "", err
	}
	return err.Error(), nil
}

// ArtifactDir is where tests keep reports and screenshots for people to
// look at: $IOPATH_ARTIFACTS (created if needed), else tmp.
func ArtifactDir(tmp string) (string, error) {
	d := os.Getenv("IOPATH_ARTIFACTS")
	if d == "" {
		return tmp, nil
	}
	return d, os.MkdirAll(d, 0o755)
}

// Page is what Chromium saw of a page.
type Page struct {
	DOM     string   // document after load, serialized (--dump-dom)
	Console []string // console messages and uncaught errors it logged
}

// consoleLine matches Chromium's log line for a console message
// (--enable-logging=stderr): `[…:INFO:CONSOLE:12] "message", source: …`.
var consoleLine = regexp.MustCompile(`:CONSOLE[:(]`)

func args(profile string, extra ...string) []string {
	return append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--disable-extensions",
		"--user-data-dir=" + profile, "--enable-logging=stderr", "--v=0", "--window-size=1400,1000", "--hide-scrollbars"}, extra...)
}

func run(bin string, a []string) (stdout, stderr []byte, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, bin, a...)
	var o, e bytes.Buffer
	c.Stdout, c.Stderr = &o, &e
	err = c.Run()
	if err != nil {
		err = fmt.Errorf("chromium %s: %w\n%s", strings.Join(a, " "), err, e.Bytes())
	}
	return o.Bytes(), e.Bytes(), err
}

// Load opens the HTML file at path, returns its DOM and console messages,
// and, if screenshot is not "", saves a PNG of the window there. tmp holds
// Chromium's throwaway profiles.
func Load(path, screenshot, tmp string) (*Page, error) {
	bin, err := Find()
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	url := "file://" + abs
	prof, err := os.MkdirTemp(tmp, "chromium-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(prof)
	out, errOut, err := run(bin, args(prof, "--dump-dom", url))
	if err != nil {
		return nil, err
	}
	p := &Page{DOM: string(out)}
	for _, l := range strings.Split(string(errOut), "\n") {
		if consoleLine.MatchString(l) {
			p.Console = append(p.Console, l)
		}
	}
	if screenshot != "" {
		prof2, err := os.MkdirTemp(tmp, "chromium-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(prof2)
		if _, _, err := run(bin, args(prof2, "--screenshot="+screenshot, url)); err != nil {
			return nil, err
		}
		if _, err := os.Stat(screenshot); err != nil {
			return nil, fmt.Errorf("chromium wrote no screenshot: %w", err)
		}
	}
	return p, nil
}

// Attr returns the value of attribute name on the page's <body>, or "".
func (p *Page) Attr(name string) string {
	m := regexp.MustCompile(`<body[^>]*\s` + regexp.QuoteMeta(name) + `="([^"]*)"`).FindStringSubmatch(p.DOM)
	if m == nil {
		return ""
	}
	return m[1]
}
