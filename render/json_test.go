package render

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/iopath/iopath/record"
)

// fillRandom sets every field reachable from v (structs, pointers, slices,
// strings, numbers, bools) to random values, leaving about a third of them
// zero (nil slices and pointers included), so that omitempty, null and
// every field's encoding are exercised.
func fillRandom(rng *rand.Rand, v reflect.Value, depth int) {
	if rng.IntN(3) == 0 && depth > 0 {
		v.SetZero()
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			fillRandom(rng, v.Field(i), depth+1)
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fillRandom(rng, v.Elem(), depth+1)
	case reflect.Slice:
		n := rng.IntN(4) // 0: an empty, non-nil slice
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			fillRandom(rng, s.Index(i), depth+1)
		}
		v.Set(s)
	case reflect.String:
		parts := []string{"a", "/var/tmp/x y", "é", "\n", "\t", "\"", "\\", "\x01", "\x7f", "\xff", "\u2028", "\u2029", "<&>", "\b\f\r", "日本"}
		var s string
		for range rng.IntN(5) {
			s += parts[rng.IntN(len(parts))]
		}
		v.SetString(s)
	case reflect.Uint64, reflect.Uint32:
		v.SetUint(rng.Uint64() >> rng.IntN(64))
		if v.Kind() == reflect.Uint32 {
			v.SetUint(uint64(uint32(v.Uint())))
		}
	case reflect.Int64:
		v.SetInt(int64(rng.Uint64()) >> rng.IntN(64))
	case reflect.Bool:
		v.SetBool(rng.IntN(2) == 0)
	default:
		panic("fillRandom: no case for " + v.Type().String())
	}
}

// The append encoder writes what encoding/json writes for every field of
// a syscall record (a field added to record.Syscall, Cache, Bio, ... is
// filled here and fails the comparison until AppendSyscallJSON has it).
func TestSyscallJSONMatchesEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 20000 {
		var r record.Syscall
		fillRandom(rng, reflect.ValueOf(&r).Elem(), 0)
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(&r); err != nil {
			t.Fatal(err)
		}
		got := append(AppendSyscallJSON(nil, &r), '\n')
		if !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("record %d:\n got %s\nwant %s", i, got, want.Bytes())
		}
	}
}

// BenchmarkJSONSyscall: a cold 4 KiB read's JSON line, appended.
func BenchmarkJSONSyscall(b *testing.B) {
	r := benchRecord()
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendSyscallJSON(buf[:0], r)
	}
}

// BenchmarkJSONSyscallEncoder: the same with encoding/json (for comparison).
func BenchmarkJSONSyscallEncoder(b *testing.B) {
	r := benchRecord()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		enc.Encode(r)
	}
}
