package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCPUProfileFlag checks that --cpuprofile writes a gzip-compressed pprof profile
// of any command, and that an unwritable path is a clear error before the command runs.
func TestCPUProfileFlag(t *testing.T) {
	dir := t.TempDir()
	prof := filepath.Join(dir, "cpu.prof")
	if _, err := runCLI(t, newRootCmd(), "account", "rdp", "--sigma", "1", "--q", "0.01", "--steps", "100", "--delta", "1e-5", "--json", "--cpuprofile", prof); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(prof)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 2 || !bytes.Equal(b[:2], []byte{0x1f, 0x8b}) {
		t.Fatalf("profile is not gzip (pprof): % x", b[:min(len(b), 8)])
	}
	_, err = runCLI(t, newRootCmd(), "account", "rdp", "--sigma", "1", "--q", "0.01", "--steps", "100", "--delta", "1e-5", "--cpuprofile", filepath.Join(dir, "missing", "cpu.prof"))
	if err == nil || !strings.Contains(err.Error(), "--cpuprofile") {
		t.Fatalf("unwritable profile path: err = %v, want a --cpuprofile error", err)
	}
}
