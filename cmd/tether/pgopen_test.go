package main

import (
	"net"
	"strings"
	"testing"
)

// TestPostgresUnreachableSaysWhatToCheck: a --db URL whose server does not
// answer is one line saying what to check, not pgx's joined errors of each
// attempt (with TLS, then without: the same words twice, on two lines).
func TestPostgresUnreachableSaysWhatToCheck(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	res := cli(t, "postgres://tether@"+addr+"/tether", "cluster", "list")
	wantError(t, res, exitError, "cannot connect to PostgreSQL at postgres://tether@"+addr+"/tether", "connection refused",
		"check the URL's host and port, and that PostgreSQL is running and listening there")
	if n := strings.Count(res.stderr, "connection refused"); n != 1 {
		t.Errorf("got %q, want the cause said once", res.stderr)
	}
}
