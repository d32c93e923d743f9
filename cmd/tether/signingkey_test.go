package main

import (
	"context"
	"strings"
	"testing"

	"github.com/tetherhq/tether/registry"
)

func TestClusterRotateSigningKey(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	c := createCluster(t, db, "signing")
	first := okJSON[registry.JWK](t, db, "cluster", "rotate-signing-key", "signing")
	if first.Kty != "OKP" || first.Crv != "Ed25519" || !strings.HasPrefix(first.Kid, "sk-") || first.X == "" {
		t.Fatalf("got %+v, want an Ed25519 JWK", first)
	}
	out := ok(t, db, "cluster", "rotate-signing-key", "signing", "--overlap", "72h").stdout
	if !strings.Contains(out, "now signs payloads with key sk-") || !strings.Contains(out, "previous key verifies until") {
		t.Errorf("got %q", out)
	}
	reg := openRegistry(t, db)
	set, err := reg.SigningKeySet(context.Background(), c.ClusterID)
	if err != nil {
		t.Fatal(err)
	}
	if len(set) != 2 || set[1].Kid != first.Kid {
		t.Errorf("key set %+v: want the new key and %s in its overlap", set, first.Kid)
	}
	if strings.Contains(ok(t, db, "audit", "--action", registry.AuditSigningKeyRotate).stdout, "signing_key") == false {
		t.Error("the rotation is not in the audit trail")
	}
}

func TestClusterSignPayloadsFlag(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ok(t, db, "cluster", "create", "--name", "sp", "--sign-payloads")
	if c := okJSON[registry.Cluster](t, db, "cluster", "get", "sp", "-o", "json"); !c.Policy.RequireSignedPayloads {
		t.Error("--sign-payloads was not stored")
	}
	if out := ok(t, db, "cluster", "get", "sp").stdout; !strings.Contains(out, "signed (Ed25519 over JCS, bound to each job)") || strings.Contains(out, "older agents") {
		t.Errorf("cluster get does not say payloads are signed, bound:\n%s", out)
	}
	// Payload-only signatures for agents older than the bound form: on
	// with edit, shown, and off again.
	ok(t, db, "cluster", "edit", "sp", "--legacy-payload-signatures")
	if c := okJSON[registry.Cluster](t, db, "cluster", "get", "sp", "-o", "json"); !c.Policy.AllowLegacyPayloadSignatures || !c.Policy.RequireSignedPayloads {
		t.Errorf("--legacy-payload-signatures: policy %+v", c.Policy)
	}
	if out := ok(t, db, "cluster", "get", "sp").stdout; !strings.Contains(out, "payload-only signatures for older agents") {
		t.Errorf("cluster get does not say legacy signatures are sent:\n%s", out)
	}
	ok(t, db, "cluster", "edit", "sp", "--legacy-payload-signatures=false")
	if c := okJSON[registry.Cluster](t, db, "cluster", "get", "sp", "-o", "json"); c.Policy.AllowLegacyPayloadSignatures {
		t.Error("--legacy-payload-signatures=false did not turn it off")
	}
	ok(t, db, "cluster", "create", "--name", "sp-legacy", "--sign-payloads", "--legacy-payload-signatures")
	if c := okJSON[registry.Cluster](t, db, "cluster", "get", "sp-legacy", "-o", "json"); !c.Policy.AllowLegacyPayloadSignatures {
		t.Error("cluster create --legacy-payload-signatures was not stored")
	}
	ok(t, db, "cluster", "edit", "sp", "--sign-payloads=false")
	if c := okJSON[registry.Cluster](t, db, "cluster", "get", "sp", "-o", "json"); c.Policy.RequireSignedPayloads {
		t.Error("--sign-payloads=false did not turn signing off")
	}
}
