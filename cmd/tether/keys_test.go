package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/apiclient"
)

// tether keys rotate, list and retire with the real binary: a rotation
// re-seals the agent's HMAC key under a new key and the registry keeps
// working with it; retire drops the old key; a wrong or missing key file is
// refused with a message saying what to do, changing nothing.
func TestKeysRotateRetireCLI(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	c := createCluster(t, db, "prod")
	reg := openRegistry(t, db)
	registerAgent(t, reg, c.RegistrationToken, "hmac")

	var before struct {
		Keys []struct {
			ID, Role string
			Values   int
		}
	}
	if err := json.Unmarshal([]byte(ok(t, db, "keys", "list", "-o", "json").stdout), &before); err != nil || len(before.Keys) != 1 || before.Keys[0].Values != 1 {
		t.Fatalf("keys list before: %+v %v", before, err)
	}
	out := ok(t, db, "keys", "rotate").stdout
	if !strings.Contains(out, "re-sealed 1 values") || !strings.Contains(out, "tether keys retire") {
		t.Fatalf("keys rotate: %s", out)
	}
	var after struct {
		Keys []struct {
			ID, Role string
			Values   int
		}
	}
	_ = json.Unmarshal([]byte(ok(t, db, "keys", "list", "-o", "json").stdout), &after)
	if len(after.Keys) != 2 || after.Keys[0].ID != before.Keys[0].ID || after.Keys[0].Role != "old" || after.Keys[0].Values != 0 ||
		after.Keys[1].Role != "primary" || after.Keys[1].Values != 1 {
		t.Fatalf("keys list after rotate: %+v", after)
	}
	out = ok(t, db, "keys", "retire").stdout
	if !strings.Contains(out, "Retired "+before.Keys[0].ID) {
		t.Fatalf("keys retire: %s", out)
	}
	b, _ := os.ReadFile(db + ".key")
	if strings.Contains(string(b), before.Keys[0].ID) || !strings.HasPrefix(string(b), "# tether key ring") {
		t.Fatalf("key file after retire:\n%s", b)
	}
	// The agent's credential still authenticates signed writes: the
	// registry opens its re-sealed key.
	ok(t, db, "credential", "list", "prod")

	// Another database's key file opens nothing here: refused, unchanged.
	other := newDB(t)
	oc := createCluster(t, other, "x")
	registerAgent(t, openRegistry(t, other), oc.RegistrationToken, "hmac")
	wantError(t, cli(t, db, "--key-file", other+".key", "keys", "rotate"), exitError, "cannot open what the database holds", "Nothing was changed")
	if b2, _ := os.ReadFile(other + ".key"); strings.HasPrefix(string(b2), "# tether key ring") {
		t.Fatal("a refused rotation changed the key file")
	}
	wantError(t, cli(t, db, "--key-file", db+".nope", "keys", "rotate"), exitError, "no key file at", "nothing to rotate", "keys init")
	wantError(t, cli(t, db, "--key-file", db+".nope", "keys", "list"), exitError, "no key file at", "nothing to list", "keys init")
}

// The real binaries: an agent signs writes (hmac) to a running tether serve
// while tether keys rotate and tether keys retire change the key file and
// re-seal its HMAC key from another process; serve picks the file up by
// itself and every signed write succeeds, before, between and after.
func TestKeysRotateWhileServeRuns(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	c := createCluster(t, db, "prod")
	p, addr, _ := startServe(t, db)
	ctx := context.Background()
	cred, err := apiclient.Register(ctx, "http://"+addr, c.RegistrationToken, apiclient.RegisterOptions{Capabilities: []string{"hmac"}, Retry: apiclient.RetryPolicy{MaxAttempts: 1}})
	if err != nil {
		t.Fatal(err)
	}
	client, err := apiclient.New(apiclient.Config{BaseURL: "http://" + addr, Credential: cred, Retry: apiclient.RetryPolicy{MaxAttempts: 1}})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	signed := func(when string) {
		t.Helper()
		n++
		ev := apiclient.HeartbeatEvent(cred.ClusterID, time.Now().UTC(), nil)
		ev.EventKey = fmt.Sprintf("hb-%d", n)
		if err := client.Events(ctx, []apiclient.Event{ev}); err != nil {
			t.Fatalf("signed write %s: %v\n%s", when, err, p.log())
		}
	}
	signed("before")
	out := ok(t, db, "keys", "rotate").stdout
	if !strings.Contains(out, "re-sealed 1 values") {
		t.Fatalf("keys rotate: %s", out)
	}
	signed("after rotate")
	ok(t, db, "keys", "retire")
	for i := range 3 {
		signed(fmt.Sprintf("after retire (%d)", i))
	}
}

// TestKeysRotateKeepsTheOwner: keys rotate and retire, run as root next to
// a key file another user owns (the systemd unit's dynamic user), leave the
// rewritten file to that user, who could not read a root-owned one.
func TestKeysRotateKeepsTheOwner(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("only root can give a file to another user")
	}
	db := newDB(t)
	c := createCluster(t, db, "prod")
	registerAgent(t, openRegistry(t, db), c.RegistrationToken, "hmac") // seals with db.key
	const uid, gid = 65534, 65534
	if err := os.Chown(db+".key", uid, gid); err != nil {
		t.Fatal(err)
	}
	for _, step := range [][]string{{"keys", "rotate"}, {"keys", "retire"}} {
		ok(t, db, step...)
		if o := fileOwner(db + ".key"); o == nil || o.uid != uid || o.gid != gid {
			t.Fatalf("after tether %s the key file is owned by %+v, want %d:%d", strings.Join(step, " "), o, uid, gid)
		}
	}
}
