// Package adminclient is a Go client of tether's admin API (/api/admin/v1):
// what producers use to submit jobs and learn their outcomes, and scripts to
// manage clusters, rollouts and webhooks. It uses only the standard library,
// so that importing it brings nothing else along.
//
//	c, err := adminclient.New("https://tether.example:7070", os.Getenv("TETHER_ADMIN_TOKEN"))
//	job, err := c.SubmitJob(ctx, adminclient.Submission{Cluster: "prod-eu", Kind: "apply", Payload: manifest,
//		IdempotencyKey: "deploy-42"}, 60*time.Second)
//
// Every error the server answers is an *Error with its code, message and
// request id; match on Code (see the admin API's documentation), never on
// the message.
package adminclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Client calls one tether's admin API with one admin token. It is safe for
// concurrent use.
type Client struct {
	base  *url.URL
	token string
	http  *http.Client
}

// Option adjusts a Client.
type Option func(*Client)

// WithHTTPClient uses hc (for its transport, TLS settings or timeout).
// Blocking calls (?wait=) extend their own deadline beyond hc's timeout only
// through the context.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.http = hc } }

// New returns a client of the tether at baseURL (scheme, host and port; a
// path prefix is kept) authenticating with an admin token.
func New(baseURL, token string, opts ...Option) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(strings.TrimSpace(baseURL), "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("tether's address %q must be an http:// or https:// URL", baseURL)
	}
	if strings.TrimSpace(token) == "" {
		return nil, errors.New("an admin token is required (tether admin-token create issues one)")
	}
	c := &Client{base: u, token: strings.TrimSpace(token), http: &http.Client{}}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// Error is an answer other than 2xx.
type Error struct {
	StatusCode int
	Code       string // a stable machine code: not_found, conflict, namespace_not_allowed, ...
	Message    string // one sentence for a person
	RequestID  string // the server's log has the details under it
}

func (e *Error) Error() string {
	return fmt.Sprintf("tether answered %d %s: %s (request %s)", e.StatusCode, e.Code, e.Message, e.RequestID)
}

// IsCode reports whether err is an *Error with the code.
func IsCode(err error, code string) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// IsRefused reports whether err is a refusal that asking again will not
// change: an answer 4xx other than 429 Too Many Requests (a revoked token,
// a role that may not watch). A watch stops reconnecting on one.
func IsRefused(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.StatusCode/100 == 4 && e.StatusCode != http.StatusTooManyRequests
}

// Page is one page of a list; pass NextCursor back for the next one (empty:
// the last page).
type Page[T any] struct {
	Items      []T    `json:"items"`
	NextCursor string `json:"nextCursor"`
}

// request describes one call.
type request struct {
	method  string
	path    string
	query   url.Values
	body    any
	header  http.Header
	out     any
	into    []any                // Into: more values the answer is decoded into
	replied func(*http.Response) // called with a 2xx answer, before its body is decoded
}

func (c *Client) do(ctx context.Context, r request) error {
	var resp *http.Response
	if err := c.doStream(ctx, r, &resp); err != nil {
		return err
	}
	defer resp.Body.Close()
	if r.replied != nil {
		r.replied(resp)
	}
	if len(r.into) == 0 {
		if r.out != nil {
			if err := json.NewDecoder(resp.Body).Decode(r.out); err != nil {
				return fmt.Errorf("decode tether's answer to %s %s: %w", r.method, r.path, err)
			}
		}
		return nil
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("read tether's answer to %s %s: %w", r.method, r.path, err)
	}
	for _, v := range append([]any{r.out}, r.into...) {
		if v == nil {
			continue
		}
		if err := json.Unmarshal(b, v); err != nil {
			return fmt.Errorf("decode tether's answer to %s %s: %w", r.method, r.path, err)
		}
	}
	return nil
}

// call is do with a typed method's options.
func (c *Client) call(ctx context.Context, r request, opts []CallOption) error {
	for _, o := range opts {
		o(&r)
	}
	return c.do(ctx, r)
}

// doStream sends the request and hands back a 2xx answer with its body
// unread (the caller closes it); any other answer is an *Error.
func (c *Client) doStream(ctx context.Context, r request, out **http.Response) error {
	u := *c.base
	u.Path = c.base.Path + "/api/admin/v1" + r.path
	if len(r.query) > 0 {
		u.RawQuery = r.query.Encode()
	}
	var body io.Reader
	if r.body != nil {
		b, err := json.Marshal(r.body)
		if err != nil {
			return fmt.Errorf("encode the request: %w", err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u.String(), body)
	if err != nil {
		return err
	}
	for k, vs := range r.header {
		req.Header[k] = vs
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if req.Header.Get("Accept") == "" {
		req.Header.Set("Accept", "application/json")
	}
	if r.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		e := &Error{StatusCode: resp.StatusCode, RequestID: resp.Header.Get("X-Request-Id")}
		var shape struct {
			Error     string `json:"error"`
			Message   string `json:"message"`
			RequestID string `json:"requestId"`
		}
		if json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&shape) == nil {
			e.Code, e.Message = shape.Error, shape.Message
			if shape.RequestID != "" {
				e.RequestID = shape.RequestID
			}
		}
		if e.Code == "" {
			e.Code, e.Message = "unexpected_answer", http.StatusText(resp.StatusCode)
		}
		return e
	}
	*out = resp
	return nil
}

func path(parts ...string) string {
	var b strings.Builder
	for _, p := range parts {
		b.WriteString("/" + url.PathEscape(p))
	}
	return b.String()
}

func pageQuery(limit int, cursor string) url.Values {
	q := url.Values{}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	return q
}

func seconds(d time.Duration) string { return strconv.Itoa(int((d + time.Second - 1) / time.Second)) }

// reason is an action's optional body.
func reason(r string) any {
	if r == "" {
		return nil
	}
	return map[string]string{"reason": r}
}

// Call sends one request to the admin API: path is relative to
// /api/admin/v1 (e.g. "/jobs/count"), body (when not nil) is sent as JSON
// and a 2xx answer is decoded into out (when not nil). The typed methods
// cover the common calls; Call reaches every endpoint the API documents,
// with the caller's own types.
func (c *Client) Call(ctx context.Context, method, path string, query url.Values, body, out any, opts ...CallOption) error {
	r := request{method: method, path: path, query: query, body: body, out: out}
	for _, o := range opts {
		o(&r)
	}
	return c.do(ctx, r)
}

// CallOption adjusts one Call.
type CallOption func(*request)

// WithHeader adds request headers (If-Match, for one).
func WithHeader(h http.Header) CallOption {
	return func(r *request) {
		if r.header == nil {
			r.header = http.Header{}
		}
		for k, vs := range h {
			r.header[k] = append(r.header[k], vs...)
		}
	}
}

// Into decodes a 2xx answer into v as well as into the typed method's own
// result: a caller with fuller types of the same JSON (tether's own
// registry records, as the CLI and the console have them) reaches the API
// through the typed methods and keeps every field. For a list, v is a
// *Page of the caller's type.
func Into(v any) CallOption {
	return func(r *request) { r.into = append(r.into, v) }
}

// OnResponse hears a 2xx answer before its body is decoded (to read a
// header such as Idempotent-Replayed).
func OnResponse(f func(*http.Response)) CallOption {
	return func(r *request) { r.replied = f }
}
