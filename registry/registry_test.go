package registry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestSecretNeverPrints(t *testing.T) {
	s := Secret("tether_cred_01jd000000000000000000000_supersecretsupersecretsupersecret")
	var logged bytes.Buffer
	slog.New(slog.NewTextHandler(&logged, nil)).Info("issued", "token", s, "wrapped", struct{ T Secret }{s})
	js, _ := json.Marshal(map[string]any{"token": s})
	for name, out := range map[string]string{
		"%v": fmt.Sprintf("%v", s), "%s": fmt.Sprintf("%s", s), "%q": fmt.Sprintf("%q", s), "%x": fmt.Sprintf("%x", s),
		"%+v struct": fmt.Sprintf("%+v", struct{ T Secret }{s}), "%#v": fmt.Sprintf("%#v", s),
		"json": string(js), "slog": logged.String(), "error": fmt.Errorf("with %v", s).Error(),
	} {
		if strings.Contains(out, "supersecret") {
			t.Errorf("%s shows the secret: %s", name, out)
		}
	}
	if s.Reveal() != string(s) {
		t.Fatal("Reveal does not return the value")
	}
}

func TestBearerShape(t *testing.T) {
	id := newCredentialID()
	tok := newBearer(credentialTokenPrefix, id)
	got, ok := parseBearer(credentialTokenPrefix, "cr-", tok.Reveal())
	if !ok || got != id {
		t.Fatalf("parseBearer(%s) = %q, %v; want %q", tok.Reveal(), got, ok, id)
	}
	for _, bad := range []string{"", "tether_cred_", tok.Reveal() + "x", strings.Replace(tok.Reveal(), "_", "-", 2), "tether_reg_" + strings.TrimPrefix(tok.Reveal(), "tether_cred_")} {
		if _, ok := parseBearer(credentialTokenPrefix, "cr-", bad); ok {
			t.Errorf("parseBearer accepted %q", bad)
		}
	}
}

func TestOperationTemplate(t *testing.T) {
	for _, tc := range []struct{ typ, engine, want string }{
		{"Backup", "velero", "backup.velero"},
		{"RunCommand", "Job", "runCommand.job"},
		{"restore", "velero", "restore.velero"},
	} {
		if got := OperationTemplate(tc.typ, tc.engine); got != tc.want {
			t.Errorf("OperationTemplate(%q, %q) = %q, want %q", tc.typ, tc.engine, got, tc.want)
		}
	}
}

func TestCredentialStates(t *testing.T) {
	now := time.Date(2026, 5, 28, 10, 0, 0, 0, time.UTC)
	c := Credential{ExpiresAt: now.Add(time.Hour), RotateUntil: now.Add(25 * time.Hour)}
	for _, tc := range []struct {
		at   time.Time
		mod  func(*Credential)
		want CredentialState
	}{
		{now, nil, CredentialActive},
		{now, func(c *Credential) { c.SupersededAt = now }, CredentialGrace},
		{now.Add(2 * time.Hour), nil, CredentialRotateOnly},
		{now.Add(26 * time.Hour), nil, CredentialExpired},
		{now, func(c *Credential) { c.RevokedAt = now }, CredentialRevoked},
	} {
		cc := c
		if tc.mod != nil {
			tc.mod(&cc)
		}
		if got := cc.State(tc.at); got != tc.want {
			t.Errorf("State = %s, want %s", got, tc.want)
		}
	}
}

// testCluster allows namespace team-a, catalog nextcloud and template
// backup.velero, like store/storetest's SubmitCases expect.
var testCluster = &Cluster{ClusterSpec: ClusterSpec{Name: "prod", AllowedNamespaces: []string{"team-a"},
	AllowedCatalogEntries: []string{"nextcloud"}, AllowedOperationTemplates: []string{"backup.velero"}}}

// FuzzCheckPayload: whatever a producer sends, validation answers with a
// coded error or a target, and never panics.
func FuzzCheckPayload(f *testing.F) {
	for _, seed := range []struct{ kind, payload string }{
		{"apply", `{"apiVersion":"a/v1","kind":"ApplicationInstance","metadata":{"name":"nc","namespace":"team-a"},"spec":{"appRef":{"catalogId":"nextcloud"}}}`},
		{"apply", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":7}}`},
		{"delete", `{"apiVersion":"v1","kind":"ConfigMap","name":"c","namespace":"team-a"}`},
		{"intent", `{"intent":"request-operation","operation":{"metadata":{"name":"b","namespace":"team-a"},"spec":{"type":"Backup","engine":"velero","targetRef":{}}}}`},
		{"intent", `{"intent":"delete-application-instance","name":"nc","namespace":"team-a"}`},
		{"intent", `{"intent":"ensure-application-instance","applicationInstance":null}`},
		{"patch", `{}`},
		{"apply", `[]`},
		{"apply", `{"metadata":{"name":"\u0000"}}`},
	} {
		f.Add(seed.kind, seed.payload)
	}
	f.Fuzz(func(t *testing.T, kind, payload string) {
		got, err := checkPayload(testCluster, JobKind(kind), json.RawMessage(payload))
		if err != nil {
			switch ErrorCode(err) {
			case CodeInvalid, CodeForbidden:
			default:
				t.Fatalf("checkPayload(%q, %q): uncoded error %v", kind, payload, err)
			}
			return
		}
		if got.target.Name == "" {
			t.Fatalf("checkPayload(%q, %q) accepted a payload without a name", kind, payload)
		}
	})
}
