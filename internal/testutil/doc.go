// Package testutil creates the conditions iopath's privileged tests need
// instead of hoping the machine provides them: a root check, a disk-backed
// directory, a cold file, sysctls set for one test and restored, an ext4
// filesystem on a loop device of its own, and a bdi whose dirty-page limit
// is tiny so that a writer is throttled whatever the disk's speed. Every
// helper undoes what it did in t.Cleanup, pass or fail.
package testutil
