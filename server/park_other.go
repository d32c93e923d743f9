//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package server

import "syscall"

// parkSupported: polls stay held inside net/http on this platform.
const parkSupported = false

func peek(fd uintptr) (int, error) { return 0, syscall.EINVAL }
