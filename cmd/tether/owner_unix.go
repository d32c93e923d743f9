//go:build unix

package main

import (
	"os"
	"syscall"
)

// fileOwner is who owns the file at path (nil when it cannot tell), so that
// a file tether puts in its place can be given the same owner.
func fileOwner(path string) *owner {
	info, err := os.Stat(path)
	if err != nil {
		return nil
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	return &owner{uid: int(st.Uid), gid: int(st.Gid)}
}

type owner struct{ uid, gid int }

// give makes o the owner of path, when it is not already. Only root can
// give a file away; for anyone else the file is theirs already, as was the
// one it replaced (they could not have replaced it otherwise).
func (o *owner) give(path string) error {
	if o == nil {
		return nil
	}
	if now := fileOwner(path); now != nil && *now == *o {
		return nil
	}
	return os.Chown(path, o.uid, o.gid)
}
