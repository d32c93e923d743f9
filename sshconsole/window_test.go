package sshconsole

import (
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/tetherhq/tether/registry"
)

// The client says how large its window is, in the pty request, in window
// changes and in the input itself (a terminal's size report, CSI 8;H;W t,
// which anyone can type). The console's screen buffer grows with width x
// height, so each is bounded: a key holder asking for a window of
// millions of cells must not take the server's memory (and the agent API
// with it).
func TestTheWindowSizeIsBounded(t *testing.T) {
	f := newFixture(t, nil)
	alice := f.identity("alice", registry.RoleViewer, "")
	const huge = 2000 // cells a side: 4 million, some 900 MiB of screen unbounded
	for _, c := range []struct {
		name string
		open func(*gossh.Session) error
		then func(*console) error
	}{
		{"PtyRequest", func(s *gossh.Session) error { return s.RequestPty("xterm-256color", huge, huge, gossh.TerminalModes{}) }, nil},
		{"WindowChange", nil, func(con *console) error { return con.sess.WindowChange(huge, huge) }},
		{"SizeReportTyped", nil, func(con *console) error { _, err := con.in.Write([]byte("\x1b[8;2000;2000t")); return err }},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := heapInUse()
			client := f.mustDial(alice)
			con := f.consoleWith(client, c.open)
			con.waitFor(t, "ssh:alice")
			if c.then != nil {
				if err := c.then(con); err != nil {
					t.Fatal(err)
				}
			}
			con.keys(t, "2", "1") // frames drawn at whatever size it took
			time.Sleep(500 * time.Millisecond)
			if grew := (int64(heapInUse()) - int64(before)) >> 20; grew > 100 {
				t.Errorf("one console asking for a %dx%d window took %d MiB", huge, huge, grew)
			}
			con.keys(t, "q")
			con.waitEnd(t)
		})
	}
}
