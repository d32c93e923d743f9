// Package testfs makes files unwritable for tests of what tether does when
// its database cannot be written, in a way that holds for root too.
//
// Changing a file's mode is not enough: root (CAP_DAC_OVERRIDE), as tests in
// containers and CI often run, opens a 0444 file for writing anyway. The
// immutable attribute (chattr +i) stops root as well, on file systems that
// have it (ext4, xfs, btrfs, tmpfs since Linux 6.0) and for a process with
// CAP_LINUX_IMMUTABLE.
package testfs

import (
	"errors"
	"io/fs"
	"os"
	"testing"
)

// ReadOnly makes the file at path unwritable until the returned function (or
// the test's cleanup) makes it writable again: by its mode for a user other
// than root, by the immutable attribute for root. For a directory, no file
// can then be created in it or removed from it. It skips the test, saying
// why, when neither works here.
func ReadOnly(t testing.TB, path string) (undo func()) {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	var restore func() error
	if os.Geteuid() != 0 {
		if err := os.Chmod(path, info.Mode().Perm()&^0o222); err != nil {
			t.Fatal(err)
		}
		restore = func() error { return os.Chmod(path, info.Mode().Perm()) }
	} else {
		if err := setImmutable(path, true); err != nil {
			t.Skipf("running as root, whom a file's mode does not stop, and the immutable attribute cannot be set on %s (%v): cannot make the database read-only here", path, err)
		}
		restore = func() error { return setImmutable(path, false) }
	}
	done := false
	undo = func() {
		t.Helper()
		if done {
			return
		}
		done = true
		if err := restore(); err != nil {
			t.Fatalf("making %s writable again: %v", path, err)
		}
	}
	t.Cleanup(undo)
	// Prove it: a test that believes the file read-only while it is not
	// would prove nothing.
	if writable(path, info.IsDir()) {
		undo()
		t.Skipf("%s is still writable after being made read-only: cannot test a read-only database here", path)
	}
	return undo
}

// writable reports whether path can be written: a file opened for writing,
// a file created in a directory.
func writable(path string, dir bool) bool {
	if !dir {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err == nil {
			f.Close()
		}
		return err == nil
	}
	f, err := os.CreateTemp(path, "probe")
	if err == nil {
		f.Close()
		os.Remove(f.Name())
	}
	return err == nil
}

// OwnerWritable gives each of paths that exists its owner's write permission
// back, as an operator fixing permissions does: SQLite creates a database's
// -wal and -shm files with the database file's mode, so a database that
// ReadOnly made read-only by its mode (a user other than root) while it had
// none got read-only ones.
func OwnerWritable(t testing.TB, paths ...string) {
	t.Helper()
	for _, p := range paths {
		info, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err == nil {
			err = os.Chmod(p, info.Mode().Perm()|0o200)
		}
		if err != nil {
			t.Fatalf("making %s writable: %v", p, err)
		}
	}
}
