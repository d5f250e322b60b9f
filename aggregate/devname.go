package aggregate

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

var devNames sync.Map // uint32 → string

// DeviceName names a kernel dev_t (major<<20 | minor) as the kernel and
// node_exporter do ("sda", "nvme0n1", "loop3"), from /sys/dev/block; a
// device without an entry there is named "MAJ:MIN".
func DeviceName(dev uint32) string {
	if n, ok := devNames.Load(dev); ok {
		return n.(string)
	}
	mm := fmt.Sprintf("%d:%d", dev>>20, dev&(1<<20-1))
	name := mm
	if target, err := os.Readlink("/sys/dev/block/" + mm); err == nil {
		name = filepath.Base(target)
	}
	devNames.Store(dev, name)
	return name
}
