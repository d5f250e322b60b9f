package tracer

import (
	"fmt"
	"unsafe"

	"github.com/iopath/iopath/bpf"
	"github.com/iopath/iopath/tracer/engine"
)

// aio decodes the libaio and io_uring records (bpf/aio.c, bpf/uring.c):
// sent whole, never cut.
func (d *Decoder) aio(e *engine.Engine, raw []byte) error {
	typ := bpf.IopathEvType(*(*uint32)(unsafe.Pointer(&raw[0])))
	switch typ {
	case bpf.IopathEvTypeEV_AIO_SUBMIT:
		if uintptr(len(raw)) >= unsafe.Sizeof(bpf.IopathAioSubmitEv{}) {
			e.HandleAioSubmit((*bpf.IopathAioSubmitEv)(unsafe.Pointer(&raw[0])))
			return nil
		}
	case bpf.IopathEvTypeEV_AIO_REAP:
		if uintptr(len(raw)) >= unsafe.Sizeof(bpf.IopathAioReapEv{}) {
			e.HandleAioReap((*bpf.IopathAioReapEv)(unsafe.Pointer(&raw[0])))
			return nil
		}
	case bpf.IopathEvTypeEV_URING_SUBMIT:
		if uintptr(len(raw)) >= unsafe.Sizeof(bpf.IopathUringSubmitEv{}) {
			e.HandleUringSubmit((*bpf.IopathUringSubmitEv)(unsafe.Pointer(&raw[0])))
			return nil
		}
	case bpf.IopathEvTypeEV_URING_PUNT:
		if uintptr(len(raw)) >= unsafe.Sizeof(bpf.IopathUringPuntEv{}) {
			e.HandleUringPunt((*bpf.IopathUringPuntEv)(unsafe.Pointer(&raw[0])))
			return nil
		}
	case bpf.IopathEvTypeEV_URING_COMPLETE:
		if uintptr(len(raw)) >= unsafe.Sizeof(bpf.IopathUringCompleteEv{}) {
			e.HandleUringComplete((*bpf.IopathUringCompleteEv)(unsafe.Pointer(&raw[0])))
			return nil
		}
	case bpf.IopathEvTypeEV_URING_ENTER:
		if uintptr(len(raw)) >= unsafe.Sizeof(bpf.IopathUringEnterEv{}) {
			e.HandleUringEnter((*bpf.IopathUringEnterEv)(unsafe.Pointer(&raw[0])))
			return nil
		}
	}
	return fmt.Errorf("record type %d too short (%d bytes)", typ, len(raw))
}
