package main

import "github.com/iopath/iopath/render"

// The demos' and reports' formatting, shared with the stories (package render).
var (
	human  = render.Bytes
	dur    = render.Duration
	pl     = render.Count
	ranges = render.Ranges
)
