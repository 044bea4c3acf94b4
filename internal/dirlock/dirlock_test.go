package dirlock_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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

// TestUnlockCleansUp: unlocking removes .lock, and the directories Lock created
// when they are still empty; a directory that existed, or that holds a file, stays.
func TestUnlockCleansUp(t *testing.T) {
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }
	t.Run("created and empty", func(t *testing.T) {
		root := t.TempDir()
		dir := filepath.Join(root, "a", "b", "run")
		unlock, err := dirlock.Lock(dir)
		if err != nil {
			t.Fatal(err)
		}
		if !exists(filepath.Join(dir, ".lock")) {
			t.Fatal("no .lock while held")
		}
		unlock()
		if exists(filepath.Join(root, "a")) {
			t.Errorf("empty directories Lock created are left behind")
		}
		if !exists(root) {
			t.Errorf("the existing parent was removed")
		}
	})
	t.Run("created with content", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "run")
		unlock, err := dirlock.Lock(dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "result.json"), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
		unlock()
		if exists(filepath.Join(dir, ".lock")) {
			t.Error(".lock left behind")
		}
		if !exists(filepath.Join(dir, "result.json")) {
			t.Error("content removed")
		}
	})
	t.Run("existed and empty", func(t *testing.T) {
		dir := t.TempDir()
		unlock, err := dirlock.Lock(dir)
		if err != nil {
			t.Fatal(err)
		}
		unlock()
		if !exists(dir) {
			t.Error("a directory the user had was removed")
		}
		if exists(filepath.Join(dir, ".lock")) {
			t.Error(".lock left behind")
		}
		again, err := dirlock.Lock(dir) // and it can be taken again
		if err != nil {
			t.Fatal(err)
		}
		again()
	})
}

// TestConcurrentSiblings: goroutines locking and unlocking sibling directories under
// a parent that each may create and remove never fail (a removed parent is created
// again) and leave no run directory behind (the shared parent may stay, empty: the
// last to unlock need not be the one that created it).
func TestConcurrentSiblings(t *testing.T) {
	root := t.TempDir()
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		go func() {
			for i := 0; i < 200; i++ {
				unlock, err := dirlock.Lock(filepath.Join(root, "runs", fmt.Sprintf("g%d-%d", g, i)))
				if err != nil {
					errs <- err
					return
				}
				unlock()
			}
			errs <- nil
		}()
	}
	for g := 0; g < 8; g++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if es, _ := os.ReadDir(filepath.Join(root, "runs")); len(es) != 0 {
		t.Errorf("left %d run directories", len(es))
	}
}

// TestFileInTheWay: a regular file where a parent directory should be is an error
// (after the bounded retries that absorb a sibling's create-and-remove race).
func TestFileInTheWay(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "runs"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if unlock, err := dirlock.Lock(filepath.Join(root, "runs", "a")); err == nil {
		unlock()
		t.Fatal("locked a directory below a regular file")
	}
}

// TestLockOpenFile: a second open of a locked file cannot lock it, in this process or
// another; closing the first releases it.
func TestLockOpenFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ck.bin")
	open := func() *os.File {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	a := open()
	if err := dirlock.LockOpenFile(a); err != nil {
		t.Fatal(err)
	}
	b := open()
	defer b.Close()
	if err := dirlock.LockOpenFile(b); !errors.Is(err, dirlock.ErrLocked) {
		t.Errorf("second open: %v, want ErrLocked", err)
	}
	a.Close()
	if err := dirlock.LockOpenFile(b); err != nil {
		t.Errorf("after the first closed: %v", err)
	}
}

// TestLockAs: a held directory gives the caller's busy wording wrapping ErrLocked;
// another failure gives what and the cause, not ErrLocked; a free one locks.
func TestLockAs(t *testing.T) {
	root := t.TempDir()
	held := filepath.Join(root, "held")
	unlock, err := dirlock.Lock(held)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	_, err = dirlock.LockAs(held, "run directory", "run directory "+held+" is busy")
	if !errors.Is(err, dirlock.ErrLocked) || err.Error() != "run directory "+held+" is busy: "+dirlock.ErrLocked.Error() {
		t.Errorf("held directory: %v, want the busy wording wrapping ErrLocked", err)
	}
	if err := os.WriteFile(filepath.Join(root, "file"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = dirlock.LockAs(filepath.Join(root, "file", "a"), "run directory", "busy")
	if err == nil || errors.Is(err, dirlock.ErrLocked) || !strings.HasPrefix(err.Error(), "run directory: ") {
		t.Errorf("file in the way: %v, want \"run directory: …\" not wrapping ErrLocked", err)
	}
	free, err := dirlock.LockAs(filepath.Join(root, "free"), "run directory", "busy")
	if err != nil {
		t.Fatalf("free directory: %v", err)
	}
	free()
}
