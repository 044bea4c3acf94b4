package dirlock_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/dpfil/dpfil/internal/dirlock"
)

// TestHelperHold is run as a child process that holds the lock until killed.
func TestHelperHold(t *testing.T) {
	dir := os.Getenv("DIRLOCK_HOLD")
	if dir == "" {
		t.Skip("helper process for TestLockExcludesOtherProcess")
	}
	if _, err := dirlock.Lock(dir); err != nil {
		os.Exit(3)
	}
	os.Stdout.WriteString("locked\n")
	select {}
}

func TestLockExcludesOtherProcess(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	cmd := exec.Command(os.Args[0], "-test.run=TestHelperHold")
	cmd.Env = append(os.Environ(), "DIRLOCK_HOLD="+dir)
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 7)
	if _, err := out.Read(buf); err != nil || string(buf) != "locked\n" {
		t.Fatalf("helper did not lock: %q %v", buf, err)
	}
	if _, err := dirlock.Lock(dir); !errors.Is(err, dirlock.ErrLocked) {
		t.Errorf("second process got %v, want ErrLocked", err)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	unlock, err := dirlock.Lock(dir) // the lock died with the process
	if err != nil {
		t.Fatalf("after the holder died: %v", err)
	}
	unlock()
}
