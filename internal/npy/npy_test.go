package npy

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	f, err := EncodeFloat32([]int{2, 3}, []float32{1, 2, 3, 4, 5, 6.5})
	if err != nil {
		t.Fatal(err)
	}
	u, _ := EncodeUint8([]int{3}, []byte{0, 128, 255})
	i, _ := EncodeInt64([]int{2, 1, 1}, []int{-3, 9})
	var buf bytes.Buffer
	if err := WriteNPZ(&buf, []Entry{{"w", f}, {"img", u}, {"lab", i}}); err != nil {
		t.Fatal(err)
	}
	arrs, err := ReadNPZ(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	if len(arrs) != 3 || arrs[0].Name != "img" || arrs[1].Name != "lab" || arrs[2].Name != "w" {
		t.Fatalf("%+v", arrs)
	}
	if a := arrs[2]; a.Dtype != "<f4" || len(a.Shape) != 2 || a.Shape[1] != 3 || a.Data[5] != 6.5 || a.Integer() {
		t.Errorf("w %+v", a)
	}
	if a := arrs[0]; a.Dtype != "|u1" || a.Data[2] != 255 || !a.Integer() || len(a.Shape) != 1 {
		t.Errorf("img %+v", a)
	}
	if a := arrs[1]; a.Data[0] != -3 || a.Len() != 2 {
		t.Errorf("lab %+v", a)
	}
}

func TestRefusals(t *testing.T) {
	good, _ := EncodeFloat32([]int{2}, []float32{1, 2})
	for _, c := range []struct {
		name string
		b    []byte
		want string
	}{
		{"empty", nil, "cannot read the magic"},
		{"magic", []byte("PK\x03\x04xxxx"), "bad magic"},
		{"truncated", good[:len(good)-1], "truncated"},
		{"trailing", append(append([]byte(nil), good...), 0), "trailing"},
		{"fortran", bytes.Replace(good, []byte("'fortran_order': False"), []byte("'fortran_order': True "), 1), "Fortran"},
		{"big-endian", bytes.Replace(good, []byte("'<f4'"), []byte("'>f4'"), 1), "big-endian"},
		{"complex", bytes.Replace(good, []byte("'<f4'"), []byte("'<c8'"), 1), "unsupported dtype"},
	} {
		_, err := Read(bytes.NewReader(c.b))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	if _, err := ReadNPZ(bytes.NewReader([]byte("nope")), 4); err == nil {
		t.Error("non-zip accepted")
	}
}

// TestReadNPZFile reads an archive from disk by name and refuses a directory, a
// missing file and a file that is no archive, naming the path.
func TestReadNPZFile(t *testing.T) {
	dir := t.TempDir()
	f, _ := EncodeFloat32([]int{2}, []float32{1.5, -2})
	u, _ := EncodeUint8([]int{1}, []byte{7})
	var buf bytes.Buffer
	if err := WriteNPZ(&buf, []Entry{{"w", f}, {"b", u}}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "a.npz")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := ReadNPZFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 2 || m["w"].Data[1] != -2 || m["b"].Data[0] != 7 || m["w"].Name != "w" {
		t.Fatalf("arrays %+v", m)
	}
	if _, err := ReadNPZFile(dir); !errors.Is(err, ErrIsDir) || !strings.Contains(err.Error(), dir) {
		t.Errorf("directory: %v", err)
	}
	if _, err := ReadNPZFile(filepath.Join(dir, "none.npz")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	bad := filepath.Join(dir, "bad.npz")
	if err := os.WriteFile(bad, []byte("not a zip"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadNPZFile(bad); err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "not a zip") {
		t.Errorf("not an archive: %v", err)
	}
}
