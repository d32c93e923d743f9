package server

import (
	"encoding/json"
	"mime"

	"github.com/tetherhq/tether/registry"
)

// mediaTypeMergePatch is RFC 7396's media type, which PATCH accepts.
const mediaTypeMergePatch = "application/merge-patch+json"

func isMergePatch(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == mediaTypeMergePatch
}

// mergePatchSpec applies an RFC 7396 merge patch to a cluster's spec: the
// spec as JSON, patched, then decoded as strictly as any admin body, so an
// unknown field is refused by name.
func mergePatchSpec(cur registry.ClusterSpec, patch []byte) (registry.ClusterSpec, error) {
	var p any
	if err := json.Unmarshal(patch, &p); err != nil {
		return cur, decodeAdminBody(patch, &registry.ClusterSpec{}, true) // says what is wrong with it
	}
	if _, isObject := p.(map[string]any); !isObject {
		return cur, errf(registry.CodeInvalid, "a merge patch of a cluster must be a JSON object of the fields to change")
	}
	doc, err := json.Marshal(cur)
	if err != nil {
		return cur, err
	}
	var target any
	if err := json.Unmarshal(doc, &target); err != nil {
		return cur, err
	}
	merged, err := json.Marshal(mergePatch(target, p))
	if err != nil {
		return cur, err
	}
	var out registry.ClusterSpec
	if err := decodeAdminBody(merged, &out, true); err != nil {
		return cur, err
	}
	return out, nil
}

// mergePatch is RFC 7396 section 2: members of an object patch replace the
// target's, null removes one, and any other patch replaces the target whole.
func mergePatch(target, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	t, ok := target.(map[string]any)
	if !ok {
		t = map[string]any{}
	}
	for k, v := range p {
		if v == nil {
			delete(t, k)
			continue
		}
		t[k] = mergePatch(t[k], v)
	}
	return t
}
