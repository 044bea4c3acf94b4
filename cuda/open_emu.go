//go:build cgo

package cuda

// openEmulator opens the CPU emulator of the device (cgo: emu.go).
func openEmulator() (Driver, error) { return NewEmulator(), nil }
