package sshconsole

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
)

// A person at the console over SSH is not on the server's machine: the
// console reads none of its files and runs none of its programs for them.
// The submit form's "From file" (a path read on the machine the console
// runs on) and ctrl+e ($EDITOR run there, with the session as its
// terminal: vi's :!sh is a shell) are for the local console only.
func TestTheConsoleTouchesNothingOnTheServer(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("TOPSECRET-8d1f"), 0o600); err != nil {
		t.Fatal(err)
	}
	ran := filepath.Join(dir, "editor-ran")
	editor := filepath.Join(dir, "editor.sh")
	if err := os.WriteFile(editor, []byte("#!/bin/sh\ntouch "+ran+"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("VISUAL", editor)
	t.Setenv("EDITOR", editor)

	f := newFixture(t, nil)
	alice := f.identity("alice", registry.RoleOperator, "")
	submitForm := func() *console {
		t.Helper()
		con := f.console(f.mustDial(alice), nil)
		con.waitFor(t, "ssh:alice")
		con.keys(t, "3")
		con.waitFor(t, "in progress")
		con.keys(t, "n")
		con.waitFor(t, "Submit a job")
		return con
	}

	// Cluster, kind, payload: ctrl+e there.
	con := submitForm()
	con.keys(t, "\t", "\t", "\x05")
	time.Sleep(300 * time.Millisecond) // an editor would have run by now
	con.keys(t, "\x1b")
	con.waitFor(t, "canceled: no job submitted")
	if _, err := os.Stat(ran); err == nil {
		t.Error("ctrl+e ran $EDITOR on the server for an SSH session")
	}
	if strings.Contains(con.text(), "$EDITOR") {
		t.Error("the console over SSH offers the server's $EDITOR")
	}

	// The field after the payload would be From file: a path, and enter.
	con = submitForm()
	con.keys(t, "\t", "\t", "\t", secret, "\r")
	time.Sleep(300 * time.Millisecond) // a file read would show by now
	con.keys(t, "\x1b")
	con.waitFor(t, "canceled: no job submitted")
	if strings.Contains(con.text(), "OPSECRET-8d1f") {
		t.Error("the console over SSH read a file of the server's into the form")
	}
	if strings.Contains(con.text(), "From file") {
		t.Error("the console over SSH offers to read the server's files")
	}
}

// keys types each of keys, one write each (one key press each).
func (c *console) keys(t testing.TB, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if _, err := c.in.Write([]byte(k)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
