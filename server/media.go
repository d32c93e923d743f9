package server

import (
	"mime"
	"strconv"
	"strings"
)

// mediaTypeV1 is the protocol's media type (seed 000): what agents send and
// what every /api/agent answer carries.
const mediaTypeV1 = "application/vnd.vworkspace.agent.v1+json"

// checkAccept applies PROTOCOL.md's rule: an absent Accept, */*,
// application/* or application/json, or the v1 media type are served as v1;
// anything else (another vendor version, text/html, ...) is 406.
func checkAccept(accept string) error {
	if strings.TrimSpace(accept) == "" {
		return nil
	}
	for _, part := range strings.Split(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue // a malformed range names nothing we serve
		}
		if q, ok := params["q"]; ok {
			if v, err := strconv.ParseFloat(q, 64); err == nil && v <= 0 {
				continue // q=0 means "not this one"
			}
		}
		switch mt {
		case "*/*", "application/*", "application/json", mediaTypeV1:
			return nil
		}
	}
	return errf(CodeNotAcceptable, "this server speaks %s (or application/json); the Accept header %q names neither", mediaTypeV1, truncate(accept, 200))
}

// checkContentType: a request body must be the v1 media type or
// application/json (parameters such as charset are allowed).
func checkContentType(ct string) error {
	if ct == "" {
		return errf(CodeUnsupportedMediaType, "a request with a body needs Content-Type: %s", mediaTypeV1)
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err == nil && (mt == mediaTypeV1 || mt == "application/json") {
		return nil
	}
	return errf(CodeUnsupportedMediaType, "Content-Type %q is not supported; send %s or application/json", truncate(ct, 200), mediaTypeV1)
}
