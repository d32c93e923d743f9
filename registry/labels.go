package registry

import (
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Labels are a cluster's key/value tags in Kubernetes label syntax
// (env=prod, topology.kubernetes.io/region=eu-west-1). Selectors pick
// clusters by them: `cluster list -l`, the console's filter, rollouts.
type Labels map[string]string

// MaxLabels bounds the labels of one cluster.
const MaxLabels = 64

// normalizeLabels trims keys and values and checks them against the
// Kubernetes rules; the error names the label and the rule it broke.
func normalizeLabels(in Labels) (Labels, error) {
	if len(in) > MaxLabels {
		return nil, Errorf(CodeInvalid, "a cluster has %d labels; at most %d are allowed", len(in), MaxLabels)
	}
	out := make(Labels, len(in))
	for k, v := range in {
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return nil, Errorf(CodeInvalid, "label key %q is not valid: %s", k, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return nil, Errorf(CodeInvalid, "label %s has value %q, which is not valid: %s", k, v, strings.Join(errs, "; "))
		}
		out[k] = v
	}
	return out, nil
}

// String renders labels as k=v pairs sorted by key, the way kubectl shows
// them.
func (l Labels) String() string {
	keys := slices.Sorted(maps.Keys(l))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + l[k]
	}
	return strings.Join(parts, ",")
}

// ParseLabelAssignments reads KEY=VALUE pairs (as `--label` gives them).
func ParseLabelAssignments(pairs []string) (Labels, error) {
	out := Labels{}
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok {
			return nil, Errorf(CodeInvalid, "label %q is not KEY=VALUE", p)
		}
		out[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return normalizeLabels(out)
}

// Selector picks clusters by their labels, in Kubernetes selector syntax:
// `env=prod,region in (eu,us),!canary`. The zero Selector matches every
// cluster.
type Selector struct {
	text string
	sel  labels.Selector
}

// ParseSelector parses a label selector. An empty one matches everything.
func ParseSelector(text string) (Selector, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return Selector{}, nil
	}
	sel, err := labels.Parse(text)
	if err != nil {
		return Selector{}, Errorf(CodeInvalid, "label selector %q is not valid: %v (examples: env=prod, region in (eu,us), !canary)", text, err)
	}
	return Selector{text: text, sel: sel}, nil
}

// Matches reports whether a cluster's labels satisfy the selector.
func (s Selector) Matches(l Labels) bool {
	if s.sel == nil {
		return true
	}
	return s.sel.Matches(labels.Set(l))
}

// Empty reports whether the selector matches every cluster.
func (s Selector) Empty() bool { return s.sel == nil }

func (s Selector) String() string { return s.text }
