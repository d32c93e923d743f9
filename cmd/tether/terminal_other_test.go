//go:build !linux

package main

import "testing"

// onTerminal needs Linux's pseudo terminals (terminal_linux_test.go).
func onTerminal(t *testing.T, db string, args ...string) string {
	t.Skip("runs the binary on a pseudo terminal: Linux only")
	return ""
}
