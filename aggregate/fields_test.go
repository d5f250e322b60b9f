package aggregate

import (
	"reflect"
	"testing"
)

// fill sets every uint64 in v (fields, arrays, histograms) to a distinct
// non-zero number.
func fill(v reflect.Value, n *uint64) {
	switch v.Kind() {
	case reflect.Uint64:
		*n++
		v.SetUint(*n)
	case reflect.Array:
		for i := range v.Len() {
			fill(v.Index(i), n)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			fill(v.Field(i), n)
		}
	}
}

// Every counter and histogram of IO, Device and Global is in its fields
// list: added to zero it gives the value back, subtracted from itself 0.
func TestFieldsCoverEveryCounter(t *testing.T) {
	var n uint64
	var io, zeroIO IO
	fill(reflect.ValueOf(&io).Elem(), &n)
	zeroIO.Add(&io)
	if !reflect.DeepEqual(zeroIO, io) {
		t.Errorf("IO.Add misses a field:\n got %+v\nwant %+v", zeroIO, io)
	}
	if d := io.Sub(&io); !reflect.DeepEqual(d, IO{}) {
		t.Errorf("IO.Sub misses a field: %+v", d)
	}
	dev := Device{DevKey: DevKey{Dev: 1, Op: RqWrite}}
	fill(reflect.ValueOf(&dev).Elem(), &n)
	zeroDev := Device{DevKey: dev.DevKey}
	zeroDev.fields().add(dev.fields())
	if !reflect.DeepEqual(zeroDev, dev) {
		t.Errorf("Device fields miss one:\n got %+v\nwant %+v", zeroDev, dev)
	}
	d := dev
	d.fields().sub(dev.fields())
	if !reflect.DeepEqual(d, Device{DevKey: dev.DevKey}) {
		t.Errorf("Device sub misses a field: %+v", d)
	}
	var g, zeroG Global
	fill(reflect.ValueOf(&g).Elem(), &n)
	zeroG.fields().add(g.fields())
	if !reflect.DeepEqual(zeroG, g) {
		t.Errorf("Global fields miss one:\n got %+v\nwant %+v", zeroG, g)
	}
	gd := g
	gd.fields().sub(g.fields())
	if !reflect.DeepEqual(gd, Global{}) {
		t.Errorf("Global sub misses a field: %+v", gd)
	}
}
