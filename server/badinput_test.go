package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/tetherhq/tether/server"
)

// TestDecodeCasesOverHTTP sends every row of server.DecodeCases (the fuzz
// seeds) to its endpoint: each gets exactly its status and code, and a
// refusal is always the error shape, never a 500.
func TestDecodeCasesOverHTTP(t *testing.T) {
	e := newEnv(t)
	a := e.newAgent("c1")
	for _, c := range server.DecodeCases {
		t.Run(c.Name, func(t *testing.T) {
			input := strings.ReplaceAll(c.Input, "{{cluster}}", a.clusterID)
			if strings.Contains(input, "{{token}}") {
				_, tok := e.cluster("cluster-" + strings.ReplaceAll(c.Name, " ", "-"))
				input = strings.ReplaceAll(input, "{{token}}", tok)
			}
			var r *response
			switch c.Endpoint {
			case "status", "result":
				job := e.submit(a.clusterID)
				a.ack(job).wantNoContent(t)
				r = a.do(http.MethodPost, "/api/agent/jobs/"+job+"/"+c.Endpoint, withBody(input))
			case "events":
				r = a.events(input)
			case "register":
				r = e.do(http.MethodPost, "/api/agent/register", withBody(input))
			case "rotate":
				r = a.do(http.MethodPost, "/api/agent/credentials/rotate", withBody(input))
			case "poll":
				r = a.do(http.MethodGet, "/api/agent/jobs?"+input)
			default:
				t.Fatalf("unknown endpoint %q", c.Endpoint)
			}
			if c.Code != "" {
				r.wantError(t, c.Status, c.Code)
				return
			}
			r.want(t, c.Status)
			if c.Endpoint == "rotate" { // keep using a live credential
				var ans credentialAnswer
				r.decode(t, &ans)
				a.token = ans.Token
			}
		})
	}
}

// TestNothingIsA500 throws junk at every endpoint, authenticated or not:
// every answer is a 4xx (or a 2xx) with the error shape, never a 5xx.
func TestNothingIsA500(t *testing.T) {
	e := newEnv(t)
	a := e.newAgent("c1", "hmac", "lease")
	job := e.submit(a.clusterID)
	paths := []string{
		"/api/agent/register", "/api/agent/credentials/rotate", "/api/agent/events", "/api/agent/jobs",
		"/api/agent/jobs/" + job + "/ack", "/api/agent/jobs/" + job + "/status", "/api/agent/jobs/" + job + "/heartbeat",
		"/api/agent/jobs/" + job + "/result", "/api/agent/jobs/%00/ack", "/api/agent/jobs/" + strings.Repeat("j", 5000) + "/ack",
	}
	bodies := []string{"", "{", "null", `{"events":[{}]}`, strings.Repeat("[", 100000), "\x00\x01\x02", `{"outcome":"noop"}`}
	headers := [][2]string{
		{"X-Agent-Signature", "v1=" + strings.Repeat("0", 64)}, {"X-Agent-Timestamp", "-99999999999999999999"},
		{"X-Claim-Id", strings.Repeat("x", 10000)}, {"Accept", ";;;"}, {"Content-Type", "application/json; charset"},
	}
	for _, p := range paths {
		for _, m := range []string{http.MethodGet, http.MethodPost} {
			for _, b := range bodies {
				for _, h := range headers {
					for _, auth := range []bool{false, true} {
						opts := []reqOption{withBody(b), withHeader(h[0], h[1])}
						if auth {
							opts = append(opts, withBearer(a.token))
						}
						r := e.do(m, p, opts...)
						if r.status >= 500 {
							t.Fatalf("%s %s body %.20q header %s: %d %s", m, p, b, h[0], r.status, r.body)
						}
						if r.status >= 400 {
							var ans errorAnswer
							r.decode(t, &ans)
							if ans.Error == "" || ans.RequestID == "" {
								t.Fatalf("%s %s: %d without the error shape: %s", m, p, r.status, r.body)
							}
						}
					}
				}
			}
		}
	}
}
