package sshconsole

import (
	"sync"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
)

// TestConsolesOnOneConnectionAreApart: an SSH client multiplexing its
// sessions (ControlMaster) opens several consoles on one connection, at
// the same moment. Each is a session of its own: quitting one leaves the
// other running and counted. The connection's context, which its sessions
// share, held the session once, so two opened together could take each
// other's and end together.
func TestConsolesOnOneConnectionAreApart(t *testing.T) {
	f := newFixture(t, nil)
	alice := f.identity("alice", registry.RoleOperator, "")
	for round := range 5 {
		conn := f.mustDial(alice)
		a, b := f.unopened(conn, nil), f.unopened(conn, nil)
		var opened sync.WaitGroup
		errs := make([]error, 2)
		for i, con := range []*console{a, b} {
			opened.Go(func() { errs[i] = con.sess.Shell() })
		}
		opened.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		a.waitFor(t, "ssh:alice")
		b.waitFor(t, "ssh:alice")
		if _, err := a.in.Write([]byte("q")); err != nil {
			t.Fatal(err)
		}
		a.waitEnd(t)
		// b goes on: it answers a key, and it is still counted.
		if _, err := b.in.Write([]byte("?")); err != nil {
			t.Fatal(err)
		}
		b.waitFor(t, "Everywhere")
		deadline := time.Now().Add(5 * time.Second)
		for f.srv.Sessions() != 1 {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: %d sessions open after one of two quit, want 1", round, f.srv.Sessions())
			}
			time.Sleep(10 * time.Millisecond)
		}
		select {
		case <-b.done:
			t.Fatalf("round %d: quitting one console ended the other on its connection", round)
		default:
		}
		conn.Close()
		b.waitEnd(t)
	}
}
