//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package server

import "syscall"

// parkSupported: the poller can tell a parked poll's connection became
// readable without reading it (MSG_PEEK).
const parkSupported = true

// peek reports whether a byte is waiting on fd (n 1), the peer closed its
// side (n 0), or neither (EAGAIN), leaving the byte where it is.
func peek(fd uintptr) (int, error) {
	var b [1]byte
	n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	return n, err
}
