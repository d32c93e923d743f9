package server

import (
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/tetherhq/tether/registry"
)

// DecodeCase is one request body (or poll query) and the answer it must get
// over HTTP. The table drives the black-box bad-input test
// (badinput_test.go) and seeds FuzzDecoders. In Input, {{token}} stands for a
// fresh registration token and {{cluster}} for the agent's cluster id.
type DecodeCase struct {
	Name     string
	Endpoint string // register, rotate, status, result, events or poll
	Input    string
	Status   int
	Code     string // the error code; empty for a success
}

// DecodeCases is exported for the black-box tests of package server_test.
var DecodeCases = []DecodeCase{
	{"status empty body", "status", ``, 400, "invalid"},
	{"status malformed", "status", `{`, 400, "invalid"},
	{"status truncated", "status", `{"phase":"Rec`, 400, "invalid"},
	{"status array", "status", `[]`, 400, "invalid"},
	{"status null", "status", `null`, 400, "invalid"},
	{"status string", "status", `"Ready"`, 400, "invalid"},
	{"status trailing data", "status", `{}{}`, 400, "invalid"},
	{"status phase number", "status", `{"phase":1}`, 400, "invalid"},
	{"status conditions string", "status", `{"conditions":"Ready"}`, 400, "invalid"},
	{"status condition time word", "status", `{"conditions":[{"type":"Ready","lastTransitionTime":"yesterday"}]}`, 400, "invalid"},
	{"status condition time number", "status", `{"conditions":[{"type":"Ready","lastTransitionTime":5}]}`, 400, "invalid"},
	{"status bad timestamp", "status", `{"timestamp":"2026-13-45T99:00:00Z"}`, 400, "invalid"},
	{"status observedGeneration string", "status", `{"conditions":[{"observedGeneration":"7"}]}`, 400, "invalid"},
	{"status unknown fields", "status", `{"phase":"Ready","future":{"deep":[1,2,{"x":null}]}}`, 204, ""},
	{"status null time", "status", `{"conditions":[{"type":"Ready","status":"True","lastTransitionTime":null}]}`, 204, ""},
	{"status empty time", "status", `{"conditions":[{"type":"Ready","status":"True","lastTransitionTime":""}],"timestamp":""}`, 204, ""},
	{"status invalid utf8", "status", "{\"phase\":\"\xff\xfe\"}", 400, "invalid"},
	{"status lone surrogate", "status", `{"message":"\udc00"}`, 400, "invalid"},
	{"status surrogate pair", "status", `{"message":"\ud83d\ude00"}`, 204, ""},
	{"status seed example", "status", `{"phase":"Reconciling","conditions":[{"type":"Reconciling","status":"True","reason":"HelmReleaseUpgrading","message":"m","lastTransitionTime":"2026-05-28T10:00:05Z"}],"message":"m","timestamp":"2026-05-28T10:00:05Z"}`, 204, ""},

	{"result empty body", "result", ``, 400, "invalid"},
	{"result malformed", "result", `{"outcome":`, 400, "invalid"},
	{"result unknown outcome", "result", `{"outcome":"exploded"}`, 400, "invalid_outcome"},
	{"result missing outcome", "result", `{"error":"x"}`, 400, "invalid_outcome"},
	{"result outcome case", "result", `{"outcome":"Succeeded"}`, 400, "invalid_outcome"},
	{"result outcome number", "result", `{"outcome":5}`, 400, "invalid"},
	{"result error object", "result", `{"outcome":"failed","error":{"msg":"x"}}`, 400, "invalid"},
	{"result failed without error", "result", `{"outcome":"failed"}`, 400, "error_required"},
	{"result conflict without error", "result", `{"outcome":"conflict","error":""}`, 400, "error_required"},
	{"result succeeded", "result", `{"outcome":"succeeded","appliedRef":{"kind":"X","generation":7},"timestamp":"2026-05-28T10:00:15Z"}`, 204, ""},
	{"result null error", "result", `{"outcome":"succeeded","error":null}`, 204, ""},
	{"result lone surrogate", "result", `{"outcome":"succeeded","appliedRef":{"name":"\ud800"}}`, 400, "invalid"},
	{"result invalid utf8", "result", "{\"outcome\":\"failed\",\"error\":\"caf\xe9\"}", 400, "invalid"},

	{"events empty body", "events", ``, 400, "invalid"},
	{"events not array", "events", `{"events":"x"}`, 400, "invalid"},
	{"events null", "events", `{"events":null}`, 400, "invalid"},
	{"events missing", "events", `{"clusterId":"{{cluster}}"}`, 400, "invalid"},
	{"events number element", "events", `{"events":[1]}`, 400, "invalid"},
	{"events null element", "events", `{"events":[null]}`, 400, "invalid"},
	{"events kind number", "events", `{"events":[{"kind":7}]}`, 400, "invalid"},
	{"events kind empty", "events", `{"events":[{"kind":""}]}`, 400, "invalid"},
	{"events resourceRef string", "events", `{"events":[{"kind":"Audit","resourceRef":"x"}]}`, 400, "invalid"},
	{"events bad timestamp", "events", `{"events":[{"kind":"Audit","timestamp":"now"}]}`, 400, "invalid"},
	{"events clusterId number", "events", `{"clusterId":5,"events":[{"kind":"Audit"}]}`, 400, "invalid"},
	{"events heartbeat", "events", `{"events":[{"kind":"ClusterHeartbeat","resourceRef":{"apiVersion":"ops.vworkspace.io/v1alpha1","kind":"Cluster","namespace":"","name":"{{cluster}}"}}]}`, 204, ""},
	{"events invalid utf8", "events", "{\"events\":[{\"kind\":\"Audit\"},{\"kind\":\"Audit\",\"extra\":\"\xff\"}]}", 400, "invalid"},
	{"events unknown fields", "events", `{"clusterId":"{{cluster}}","batch":3,"events":[{"kind":"Audit","eventKey":"k","somethingNew":true}]}`, 204, ""},

	{"register malformed", "register", `{`, 400, "invalid"},
	{"register array", "register", `[]`, 400, "invalid"},
	{"register token number", "register", `{"registrationToken":5}`, 400, "invalid"},
	{"register capabilities string", "register", `{"registrationToken":"{{token}}","capabilities":"hmac"}`, 400, "invalid"},
	{"register no token", "register", `{"clusterId":"x"}`, 401, "registration_token_invalid"},
	{"register bad token", "register", `{"registrationToken":"tether_reg_nope"}`, 401, "registration_token_invalid"},
	{"register ok", "register", `{"registrationToken":"{{token}}","clusterId":"not-mine","capabilities":["lease","bogus"]}`, 200, ""},

	{"rotate malformed", "rotate", `{`, 400, "invalid"},
	{"rotate array", "rotate", `[1]`, 400, "invalid"},
	{"rotate unknown fields", "rotate", `{"anything":1}`, 200, ""},

	{"poll wait word", "poll", `cluster={{cluster}}&wait=abc`, 400, "invalid"},
	{"poll wait negative", "poll", `cluster={{cluster}}&wait=-5`, 400, "invalid"},
	{"poll wait fraction", "poll", `cluster={{cluster}}&wait=0.5`, 400, "invalid"},
	{"poll wait huge", "poll", `cluster={{cluster}}&wait=1e9`, 400, "invalid"},
	{"poll limit zero", "poll", `cluster={{cluster}}&wait=0&limit=0`, 400, "invalid"},
	{"poll limit word", "poll", `cluster={{cluster}}&wait=0&limit=ten`, 400, "invalid"},
	{"poll no cluster", "poll", `wait=0`, 400, "invalid"},
	{"poll ok", "poll", `cluster={{cluster}}&wait=0&limit=101&extra=1`, 200, ""},
}

// FuzzDecoders feeds arbitrary bytes to every request decoder: none may
// panic, and every refusal must be a client error (4xx) with a code the
// status table knows.
func FuzzDecoders(f *testing.F) {
	r := strings.NewReplacer("{{token}}", "tether_reg_01hxyza1b2c3d4e5f6g7h8j9k0_abcdefghijklmnopqrstuvwxyz234567", "{{cluster}}", "cl-01hxyza1b2c3d4e5f6g7h8j9k0")
	for _, c := range DecodeCases {
		f.Add([]byte(r.Replace(c.Input)))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		check := func(what string, err error) {
			t.Helper()
			if err == nil {
				return
			}
			var e *registry.Error
			if !errors.As(err, &e) {
				t.Fatalf("%s: error without a code: %v", what, err)
			}
			if _, known := statusOf[e.Code]; !known {
				t.Fatalf("%s: code %q is not in the status table", what, e.Code)
			}
			if s := HTTPStatus(e.Code); s < 400 || s > 499 {
				t.Fatalf("%s: %v is a %d, want a 4xx", what, err, s)
			}
			if e.Message == "" {
				t.Fatalf("%s: empty message", what)
			}
		}
		_, err := decodeStatus(data)
		check("status", err)
		_, err = decodeResult(data)
		check("result", err)
		_, events, err := decodeEvents(data)
		check("events", err)
		if err == nil && (len(events) == 0 || len(events) > registry.MaxEventsPerBatch) {
			t.Fatalf("events decoded %d events", len(events))
		}
		p, err := decodeRegister(data, "")
		check("register", err)
		if err == nil && p.Token == "" {
			t.Fatal("register decoded without a token")
		}
		var ignored struct{}
		check("rotate", decodeJSON(data, &ignored, false))
		if q, err := url.ParseQuery(string(data)); err == nil {
			p, err := parsePoll(q)
			check("poll", err)
			if err == nil && (p.Wait < 0 || p.Wait > MaxWait || p.Limit < 1 || p.Limit > registry.MaxPollLimit || p.Cluster == "") {
				t.Fatalf("poll %q decoded out of range: %+v", data, p)
			}
		}
		check("accept", checkAccept(string(data)))
		check("content-type", checkContentType(string(data)))
	})
}
