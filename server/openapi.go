package server

import (
	_ "embed"
	"net/http"
)

// openAPIDocument is the OpenAPI 3.1 contract of both APIs, written by hand
// beside the handlers (server/openapi.json). openapi_test.go validates real
// answers of every endpoint against it and checks that it names exactly the
// routes the server has, so it cannot drift from them unnoticed.
//
//go:embed openapi.json
var openAPIDocument []byte

// OpenAPIDocument returns the OpenAPI 3.1 document of the agent and admin
// APIs (a copy: callers may change it).
func OpenAPIDocument() []byte { return append([]byte(nil), openAPIDocument...) }

// adminOpenAPI is GET /api/admin/v1/openapi.json. It takes an admin token of
// any role like every admin endpoint: the listener is often reachable from
// every cluster's network, and the document is the repository's file, so
// whoever writes a client has it without asking a server (docs/admin-api.md).
func (s *Server) adminOpenAPI(c *call) error {
	h := c.w.Header()
	h.Set("Content-Type", mediaTypeAdmin)
	h.Set("Cache-Control", "no-cache")
	c.w.WriteHeader(http.StatusOK)
	_, _ = c.w.Write(openAPIDocument)
	return nil
}
