package cuda

import (
	"errors"
	"strings"
	"testing"
	"unsafe"

	"github.com/dpfil/dpfil/models"
)

// allocFailDriver is the emulator, with an Alloc and AllocManaged that fail (a full
// device) when fail is set, counting its Close calls.
type allocFailDriver struct {
	Driver
	fail   bool
	closes int
}

func (d *allocFailDriver) AllocManaged(n int) (unsafe.Pointer, error) {
	if d.fail {
		return nil, errors.New("out of memory")
	}
	return d.Driver.AllocManaged(n)
}

func (d *allocFailDriver) Alloc(n int) (unsafe.Pointer, error) {
	if d.fail {
		return nil, errors.New("out of memory")
	}
	return d.Driver.Alloc(n)
}

func (d *allocFailDriver) Close() error {
	d.closes++
	return d.Driver.Close()
}

// TestOpenClosesTheDriverOnError: a driver on which Open cannot allocate the model's
// buffers is closed (on a GPU it holds the primary context, the kernels and a cuBLAS
// handle), and so is one whose model cannot be built.
func TestOpenClosesTheDriverOnError(t *testing.T) {
	arch, err := models.ArchByName("mnist-cnn")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		arch models.Arch
		drv  *allocFailDriver
		want string
	}{
		{"backend", arch, &allocFailDriver{Driver: NewEmulator(), fail: true}, "out of memory"},
		{"model", models.Arch{Name: "broken"}, &allocFailDriver{Driver: NewEmulator()}, "cuda model"},
	} {
		m, err := Open(tc.arch, tc.drv)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Open = %v, %v; want an error mentioning %q", tc.name, m, err, tc.want)
		}
		if tc.drv.closes != 1 {
			t.Errorf("%s: the driver was closed %d times, want 1", tc.name, tc.drv.closes)
		}
	}
}
