//go:build !cgo

package cuda

import "errors"

// openEmulator reports that the CPU emulator, which is C (emu.go, emu_kernels.c), is
// not in a binary built without cgo.
func openEmulator() (Driver, error) {
	return nil, errors.New("cuda: the device emulator (cuda-emu) needs cgo; this binary was built with CGO_ENABLED=0")
}
