package main

import "github.com/iopath/iopath/tracer"

// flushLine tells what an fsync-family call did to the device's volatile
// write cache when no flush request appears among its bios.
func flushLine(outcome string) string {
	switch outcome {
	case tracer.FlushNotNeeded:
		return "device cache: write through (queue/write_cache): no flush was needed"
	case tracer.FlushNone:
		return "device cache: write back, but no flush request served this call (the data may still be in the device's cache)"
	case tracer.FlushNotRequested:
		return "device cache: not flushed (sync_file_range starts or waits for writeback only; it never flushes the device cache)"
	case tracer.FlushNoDevice:
		return "device cache: none (no block device)"
	}
	return ""
}
