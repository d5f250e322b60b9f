package aggregate

// fields are the counters and histograms of an IO, a Device or a Global,
// in a fixed order, for the arithmetic that treats every one alike (Add,
// Sub, Delta, Accumulate): a counter added to one of these types is
// listed once, in its fields method, and every operation then covers it
// (TestFieldsCoverEveryCounter checks that none is left out).
type fields struct {
	n []*uint64
	h []*Hist
}

// add adds g to f, field by field.
func (f fields) add(g fields) {
	for i, p := range f.n {
		*p += *g.n[i]
	}
	for i, h := range f.h {
		h.Add(g.h[i])
	}
}

// sub subtracts g from f, field by field, 0 where g is larger.
func (f fields) sub(g fields) {
	for i, p := range f.n {
		*p = sub(*p, *g.n[i])
	}
	for i, h := range f.h {
		*h = h.Sub(g.h[i])
	}
}

func (a *IO) fields() fields {
	f := fields{
		n: []*uint64{&a.HitPages, &a.MissPages, &a.ReadaheadPages, &a.DiskReadBytes, &a.DiskWriteBytes, &a.WritebackBytes,
			&a.DirtiedPages, &a.CleanedPages, &a.ThrottleNs, &a.NoBdevPages, &a.DirectReadBytes},
		h: make([]*Hist, 0, Ops),
	}
	for i := range Ops {
		f.n = append(f.n, &a.Calls[i], &a.Errors[i], &a.Bytes[i], &a.LatencyNs[i])
		f.h = append(f.h, &a.Lat[i])
	}
	return f
}

func (v *Device) fields() fields {
	return fields{n: []*uint64{&v.Requests, &v.Bytes, &v.Errors, &v.D2CNs, &v.Q2CNs, &v.Q2CUnknown, &v.Unseen}, h: []*Hist{&v.D2C, &v.Q2C}}
}

func (g *Global) fields() fields {
	f := fields{n: []*uint64{&g.DirtyToDiskNs}, h: []*Hist{&g.DirtyToDisk}}
	for i := range Ops {
		for c := range 2 {
			f.n = append(f.n, &g.SyscallLatNs[i][c])
			f.h = append(f.h, &g.SyscallLat[i][c])
		}
	}
	for i := range g.Overflow {
		f.n = append(f.n, &g.Overflow[i])
	}
	return f
}
