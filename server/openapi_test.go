package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/schema_validation"
	"github.com/pb33f/libopenapi/datamodel/high/base"

	"github.com/tetherhq/tether/server"
)

// The OpenAPI document (server/openapi.json) against the server itself: it
// is a valid OpenAPI 3.1 document, it lists exactly the server's routes and
// error codes, and every endpoint's real requests and answers validate
// against it (openapi_drive_test.go drives them).

// contract is the document loaded into pb33f's validator.
type contract struct {
	v        validator.Validator
	doc      map[string]any // the raw JSON, for route and code checks
	watchEvt *base.Schema   // components/schemas/WatchEvent: each SSE data of GET /watch
	paths    [][]string     // each path's segments, to name the template a request matched
}

func loadContract(t *testing.T) *contract {
	t.Helper()
	raw := server.OpenAPIDocument()
	document, err := libopenapi.NewDocument(raw)
	if err != nil {
		t.Fatalf("the OpenAPI document does not parse: %v", err)
	}
	v, errs := validator.NewValidator(document)
	if len(errs) > 0 {
		t.Fatalf("the OpenAPI document does not build: %v", errs)
	}
	c := &contract{v: v}
	if err := json.Unmarshal(raw, &c.doc); err != nil {
		t.Fatal(err)
	}
	model, err := document.BuildV3Model()
	if err != nil {
		t.Fatal(err)
	}
	proxy := model.Model.Components.Schemas.GetOrZero("WatchEvent")
	if proxy == nil {
		t.Fatal("components/schemas has no WatchEvent")
	}
	c.watchEvt = proxy.Schema()
	for path := range c.doc["paths"].(map[string]any) {
		c.paths = append(c.paths, strings.Split(path, "/"))
	}
	return c
}

// template names the document's path a request path matches: literal
// segments win over parameters, as in the server's router.
func (c *contract) template(path string) string {
	segs := strings.Split(path, "/")
	best, bestLiterals := "", -1
	for _, p := range c.paths {
		if len(p) != len(segs) {
			continue
		}
		literals, match := 0, true
		for i, seg := range p {
			switch {
			case strings.HasPrefix(seg, "{"):
				match = match && segs[i] != ""
			case seg == segs[i]:
				literals++
			default:
				match = false
			}
		}
		if match && literals > bestLiterals {
			best, bestLiterals = strings.Join(p, "/"), literals
		}
	}
	if best == "" {
		return "unlisted " + path
	}
	return best
}

// validateExchange checks one request and its answer against the document
// and returns what does not match (nothing: they conform). checkRequest is
// false for requests a test sends wrong on purpose, whose refusal is still
// checked.
func (c *contract) validateExchange(req *http.Request, reqBody []byte, resp *http.Response, respBody []byte, checkRequest bool) []string {
	var problems []string
	if checkRequest {
		r := req.Clone(req.Context())
		r.Body = io.NopCloser(bytes.NewReader(reqBody))
		if ok, errs := c.v.ValidateHttpRequestSync(r); !ok {
			for _, e := range errs {
				problems = append(problems, fmt.Sprintf("request: %s: %s", e.Message, e.Reason))
			}
		}
	}
	r := req.Clone(req.Context())
	r.Body = io.NopCloser(bytes.NewReader(reqBody))
	copyResp := *resp
	copyResp.Body = io.NopCloser(bytes.NewReader(respBody))
	if ok, errs := c.v.ValidateHttpResponse(r, &copyResp); !ok {
		for _, e := range errs {
			msg := fmt.Sprintf("answer %d: %s: %s", resp.StatusCode, e.Message, e.Reason)
			for _, se := range e.SchemaValidationErrors {
				msg += fmt.Sprintf(" [%s: %s]", se.FieldPath, se.Reason)
			}
			problems = append(problems, msg)
		}
	}
	return problems
}

// validateWatchData checks one server-sent event's data.
func (c *contract) validateWatchData(data string) []string {
	sv := schema_validation.NewSchemaValidator()
	ok, errs := sv.ValidateSchemaStringWithVersion(c.watchEvt, data, 3.1)
	if ok {
		return nil
	}
	var problems []string
	for _, e := range errs {
		msg := fmt.Sprintf("watch event %s: %s", truncateForLog(data), e.Reason)
		for _, se := range e.SchemaValidationErrors {
			msg += fmt.Sprintf(" [%s: %s]", se.FieldPath, se.Reason)
		}
		problems = append(problems, msg)
	}
	return problems
}

// headerInvalidRequest marks a request the test sends wrong on purpose: the
// transport removes it and validates only the answer.
const headerInvalidRequest = "X-Test-Invalid-Request"

func invalidRequest() reqOption { return withHeader(headerInvalidRequest, "1") }

// validatingTransport validates every exchange of a test's client against
// the contract and remembers which operations answered which statuses.
type validatingTransport struct {
	c    *contract
	base http.RoundTripper

	mu       sync.Mutex
	problems []string
	seen     map[string][]int // "METHOD /template" -> statuses
}

func (vt *validatingTransport) fail(format string, args ...any) {
	vt.mu.Lock()
	defer vt.mu.Unlock()
	vt.problems = append(vt.problems, fmt.Sprintf(format, args...))
}

func (vt *validatingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	checkRequest := req.Header.Get(headerInvalidRequest) == ""
	req = req.Clone(req.Context())
	req.Header.Del(headerInvalidRequest)
	var reqBody []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		req.Body.Close()
		reqBody = b
		req.Body = io.NopCloser(bytes.NewReader(b))
	}
	resp, err := vt.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	op := req.Method + " " + vt.c.template(req.URL.Path)
	vt.mu.Lock()
	if !slices.Contains(vt.seen[op], resp.StatusCode) {
		vt.seen[op] = append(vt.seen[op], resp.StatusCode)
	}
	vt.mu.Unlock()
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		// A stream that ends when the client leaves: its status and headers
		// now, each event's data as the client reads it.
		for _, p := range vt.c.validateExchange(req, reqBody, resp, nil, checkRequest) {
			vt.fail("%s: %s", op, p)
		}
		resp.Body = &sseValidator{ReadCloser: resp.Body, vt: vt}
		return resp, nil
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	for _, p := range vt.c.validateExchange(req, reqBody, resp, body, checkRequest) {
		vt.fail("%s %s: %s (answer %s)", req.Method, req.URL.RequestURI(), p, truncateForLog(string(body)))
	}
	return resp, nil
}

// sseValidator validates each "data:" line of a server-sent event stream as
// the client reads it.
type sseValidator struct {
	io.ReadCloser
	vt      *validatingTransport
	partial []byte
}

func (s *sseValidator) Read(p []byte) (int, error) {
	n, err := s.ReadCloser.Read(p)
	s.partial = append(s.partial, p[:n]...)
	for {
		i := bytes.IndexByte(s.partial, '\n')
		if i < 0 {
			break
		}
		line := string(s.partial[:i])
		s.partial = s.partial[i+1:]
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			for _, p := range s.vt.c.validateWatchData(data) {
				s.vt.fail("GET watch: %s", p)
			}
		}
	}
	return n, err
}

// validating makes every request of e's client validated against the
// document; check reports what did not conform.
func validating(t *testing.T, e *env, c *contract) *validatingTransport {
	vt := &validatingTransport{c: c, base: e.client.Transport, seen: map[string][]int{}}
	e.client.Transport = vt
	return vt
}

func (vt *validatingTransport) check(t *testing.T) {
	t.Helper()
	vt.mu.Lock()
	defer vt.mu.Unlock()
	for _, p := range vt.problems {
		t.Errorf("does not match the OpenAPI document: %s", p)
	}
	vt.problems = nil
}

func TestOpenAPIDocumentIsValid31(t *testing.T) {
	c := loadContract(t)
	if v := c.doc["openapi"]; v != "3.1.0" {
		t.Fatalf("openapi %v, want 3.1.0", v)
	}
	if ok, errs := c.v.ValidateDocument(); !ok {
		for _, e := range errs {
			t.Errorf("%s: %s", e.Message, e.Reason)
			for _, se := range e.SchemaValidationErrors {
				t.Errorf("  %s: %s", se.FieldPath, se.Reason)
			}
		}
	}
}

// TestOpenAPIListsExactlyTheRoutes keeps the document from drifting: every
// route the server has is in it, and nothing else; its error codes are the
// status table's, each under the status the table gives it.
func TestOpenAPIListsExactlyTheRoutes(t *testing.T) {
	c := loadContract(t)
	e := newEnv(t)
	var documented []string
	for path, item := range c.doc["paths"].(map[string]any) {
		for method := range item.(map[string]any) {
			switch method {
			case "get", "post", "put", "patch", "delete", "head", "options":
				documented = append(documented, strings.ToUpper(method)+" "+path)
			}
		}
	}
	sort.Strings(documented)
	routes := e.srv.Endpoints()
	for _, r := range routes {
		if !slices.Contains(documented, r) {
			t.Errorf("route %s is not in server/openapi.json", r)
		}
	}
	for _, d := range documented {
		if !slices.Contains(routes, d) {
			t.Errorf("server/openapi.json lists %s, which the server does not have", d)
		}
	}

	components := c.doc["components"].(map[string]any)
	errSchema := components["schemas"].(map[string]any)["Error"].(map[string]any)
	var enum []string
	for _, v := range errSchema["properties"].(map[string]any)["error"].(map[string]any)["enum"].([]any) {
		enum = append(enum, v.(string))
	}
	codes := server.ErrorCodes()
	for code := range codes {
		if !slices.Contains(enum, code) {
			t.Errorf("error code %s is not in the Error schema's enum", code)
		}
	}
	for _, code := range enum {
		if _, ok := codes[code]; !ok {
			t.Errorf("the Error schema lists code %s, which the server's status table does not have", code)
		}
	}
	// Every error answer an operation declares is the error shape in its
	// API's media type (/metrics takes admin tokens: the admin API's).
	for path, item := range c.doc["paths"].(map[string]any) {
		api := "Admin"
		if !strings.HasPrefix(path, "/api/admin/") && path != "/metrics" {
			api = "Agent"
		}
		for method, o := range item.(map[string]any) {
			for status, r := range o.(map[string]any)["responses"].(map[string]any) {
				if status >= "400" {
					want := fmt.Sprintf("#/components/responses/%s%s", api, status)
					if got, _ := r.(map[string]any)["$ref"].(string); got != want {
						t.Errorf("%s %s answers %s with %q, want %q", method, path, status, got, want)
					}
				}
			}
		}
	}
}

// TestOpenAPIFailsAWrongAnswer shows the validation has teeth: answers that
// differ from the document (a missing field, an unknown field, a wrong type,
// an undocumented status, the wrong media type) are reported.
func TestOpenAPIFailsAWrongAnswer(t *testing.T) {
	c := loadContract(t)
	req, _ := http.NewRequest("GET", "http://127.0.0.1/api/admin/v1/jobs/j-1", nil)
	req.Header.Set("Authorization", "Bearer tether_adm_x")
	good := `{"id":"j-1","clusterId":"c-1","kind":"apply","target":{},"payload":{},"state":"queued","attempt":1,` +
		`"createdAt":"2026-11-25T06:00:00Z","updatedAt":"2026-11-25T06:00:00Z"}`
	answer := func(status int, ct, body string) *http.Response {
		return &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {ct}, "X-Request-Id": {"rq-1"}}}
	}
	if p := c.validateExchange(req, nil, answer(200, "application/json", good), []byte(good), true); len(p) > 0 {
		t.Fatalf("a conforming answer is reported: %v", p)
	}
	for name, tc := range map[string]struct {
		status   int
		ct, body string
	}{
		"missing field": {200, "application/json", strings.Replace(good, `"state":"queued",`, "", 1)},
		"unknown field": {200, "application/json", strings.Replace(good, `"attempt":1`, `"attempt":1,"attempts":1`, 1)},
		"wrong type":    {200, "application/json", strings.Replace(good, `"attempt":1`, `"attempt":"1"`, 1)},
		"unknown state": {200, "application/json", strings.Replace(good, `"queued"`, `"waiting"`, 1)},
		"status":        {418, "application/json", good},
		"media type":    {200, "text/html", "<p>job</p>"},
		"error shape":   {404, "application/json", `{"code":"not_found","message":"no such job"}`},
		"error code":    {404, "application/json", `{"error":"missing","message":"no such job","requestId":"rq-1"}`},
	} {
		t.Run(name, func(t *testing.T) {
			if p := c.validateExchange(req, nil, answer(tc.status, tc.ct, tc.body), []byte(tc.body), true); len(p) == 0 {
				t.Fatalf("answer %d %s %s was not reported", tc.status, tc.ct, tc.body)
			}
		})
	}
	t.Run("watch event", func(t *testing.T) {
		if p := c.validateWatchData(`{"type":"upsert","seq":3,"kind":"job","id":"j-1","object":` + good + `}`); len(p) > 0 {
			t.Fatalf("a conforming event is reported: %v", p)
		}
		if p := c.validateWatchData(`{"type":"upserted","seq":3}`); len(p) == 0 {
			t.Fatal("an event of an unknown type was not reported")
		}
	})
	t.Run("through the transport", func(t *testing.T) {
		// The transport the drive uses reports a wrong answer of a real
		// server: here a handler that answers a job without its state.
		ts := &validatingTransport{c: c, seen: map[string][]int{}, base: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			body := strings.Replace(good, `"state":"queued",`, "", 1)
			resp := answer(200, "application/json", body)
			resp.Body = io.NopCloser(strings.NewReader(body))
			return resp, nil
		})}
		resp, err := (&http.Client{Transport: ts}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if len(ts.problems) == 0 {
			t.Fatal("the validating transport did not report an answer without state")
		}
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestOpenAPIServed(t *testing.T) {
	e := newEnv(t)
	viewer := e.adminToken("reader", "viewer", "")
	r := e.api("GET", "/openapi.json", viewer, nil)
	r.want(t, 200)
	if !bytes.Equal(r.body, server.OpenAPIDocument()) || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /api/admin/v1/openapi.json: %s, %d bytes, not the embedded document", r.header.Get("Content-Type"), len(r.body))
	}
	wantAPIError(t, e.api("GET", "/openapi.json", "", nil), 401, "unauthorized")
	// Not served anywhere without a token (docs/admin-api.md says why).
	e.do("GET", "/openapi.json").wantError(t, 404, "not_found")
}

// TestOpenAPIListsEveryJobFilter: the query parameters GET /jobs and
// GET /jobs/count read (admin-api.md's filters) are all in the document, so
// that a generated client can send them.
func TestOpenAPIListsEveryJobFilter(t *testing.T) {
	c := loadContract(t)
	filters := []string{"cluster", "exceptCluster", "state", "kind", "search", "error", "leaseExpiredBefore", "leaseLiveAt",
		"noLease", "activityBefore", "finishedAfter", "order"}
	for path, own := range map[string][]string{
		"/api/admin/v1/jobs":       {"stuck", "offset", "limit", "cursor"},
		"/api/admin/v1/jobs/count": {"after", "stuck"},
	} {
		documented := map[string]bool{}
		op := c.doc["paths"].(map[string]any)[path].(map[string]any)["get"].(map[string]any)
		for _, p := range op["parameters"].([]any) {
			p := p.(map[string]any)
			if ref, ok := p["$ref"].(string); ok {
				name := strings.TrimPrefix(ref, "#/components/parameters/")
				p = c.doc["components"].(map[string]any)["parameters"].(map[string]any)[name].(map[string]any)
			}
			if p["in"] == "query" {
				documented[p["name"].(string)] = true
			}
		}
		for _, name := range append(slices.Clone(filters), own...) {
			if !documented[name] {
				t.Errorf("GET %s reads ?%s=, which server/openapi.json does not list", path, name)
			}
		}
	}
}
