package registry

import (
	"regexp"
	"slices"
	"strings"
	"time"
)

// ClusterState is the lifecycle of a cluster record: Pending until its agent
// redeems a registration token, then Active; an admin may disable and enable
// it at any time.
type ClusterState string

const (
	ClusterPending  ClusterState = "pending"
	ClusterActive   ClusterState = "active"
	ClusterDisabled ClusterState = "disabled"
)

// ConnectivityMode is how the control plane reaches the cluster (seed 003).
type ConnectivityMode string

const (
	ModePull   ConnectivityMode = "pull"
	ModePush   ConnectivityMode = "push"
	ModeGitOps ConnectivityMode = "gitops"
)

// Capabilities an agent may negotiate at registration (PROTOCOL.md).
const (
	CapabilityHMAC  = "hmac"  // signed writes
	CapabilityLease = "lease" // leases, heartbeats and fencing
)

// KnownCapabilities is every capability tether understands.
var KnownCapabilities = []string{CapabilityHMAC, CapabilityLease}

// Policy defaults and bounds.
const (
	DefaultLeaseSeconds = 60
	MinLeaseSeconds     = 5
	MaxLeaseSeconds     = 24 * 60 * 60
	DefaultMaxAttempts  = 5
	MaxMaxAttempts      = 100
)

// Wildcard in an allowlist allows every value.
const Wildcard = "*"

// Policy is how tether treats a cluster's jobs and agents.
type Policy struct {
	// LeaseSeconds is the lease a lease client gets on ack; 0 means jobs of this
	// cluster are never reclaimed automatically.
	LeaseSeconds int `json:"leaseSeconds"`
	// MaxAttempts bounds reclaims: a job whose lease expires on its last attempt
	// ends failed with error lease_expired.
	MaxAttempts int `json:"maxAttempts"`
	// RequiredCapabilities must all be negotiated at registration.
	RequiredCapabilities []string `json:"requiredCapabilities"`
	// RequireClientCertificate: the agent's every authenticated request must
	// come with a verified client certificate naming the cluster (mTLS);
	// without one it is refused with 401 client_certificate_required.
	RequireClientCertificate bool `json:"requireClientCertificate,omitempty"`
	// RequireSignedPayloads: every job handed to the agent carries
	// jobSignature and signatureKeyId (Ed25519, with the cluster's signing
	// key, over the job bound to its id, cluster, kind and expiry:
	// internal/jobsig's format v2).
	RequireSignedPayloads bool `json:"requireSignedPayloads,omitempty"`
	// AllowLegacyPayloadSignatures: a signed job also carries signature,
	// the payload-only signature (format v1) that agents older than the
	// bound form verify. It binds nothing but the payload, so a relay can
	// move it to another job: turn it off once every agent verifies
	// jobSignature. No effect without RequireSignedPayloads.
	AllowLegacyPayloadSignatures bool `json:"allowLegacyPayloadSignatures,omitempty"`
	// RequireEncryptedPayloads: every job handed to the agent carries
	// encryptedPayload (a JWE to the cluster's PublicKey) instead of
	// payload, and the cluster's payloads are stored sealed. Refused
	// without a PublicKey.
	RequireEncryptedPayloads bool `json:"requireEncryptedPayloads,omitempty"`
}

// ClusterSpec is the part of a cluster record an admin writes: seed 003's
// identity record plus policy.
type ClusterSpec struct {
	Name                      string           `json:"name"`
	Organization              string           `json:"organization"`
	Labels                    Labels           `json:"labels,omitempty"`
	PublicKey                 AgentPublicKey   `json:"publicKey,omitempty"`
	AllowedNamespaces         []string         `json:"allowedNamespaces"`
	AllowedCatalogEntries     []string         `json:"allowedCatalogEntries"`
	AllowedOperationTemplates []string         `json:"allowedOperationTemplates"`
	Mode                      ConnectivityMode `json:"mode"`
	Policy                    Policy           `json:"policy"`
}

// Cluster is a cluster's identity record, its lifecycle state, and (kept apart
// in storage so heartbeats never conflict with edits) its observed status.
type Cluster struct {
	ID string `json:"id"`
	ClusterSpec
	State ClusterState `json:"state"`
	// Version increases with every write to the record (not to its status);
	// edits compare-and-swap on it.
	Version      int64     `json:"version"`
	CreatedAt    time.Time `json:"createdAt"`
	UpdatedAt    time.Time `json:"updatedAt"`
	RegisteredAt time.Time `json:"registeredAt,omitzero"`
	// PausedAt is set while the cluster's queue is paused: its polls get no
	// job (its agent stays registered and heartbeating), submissions still
	// queue.
	PausedAt    time.Time     `json:"pausedAt,omitzero"`
	PauseReason string        `json:"pauseReason,omitempty"`
	Status      ClusterStatus `json:"status"`
}

// Paused reports whether the cluster's queue is paused.
func (c *Cluster) Paused() bool { return !c.PausedAt.IsZero() }

// ClusterStatus is what the cluster's agent last told us about itself.
type ClusterStatus struct {
	LastHeartbeatAt time.Time   `json:"lastHeartbeatAt,omitzero"`
	Capabilities    []string    `json:"capabilities"`
	Conditions      []Condition `json:"conditions"`
	UpdatedAt       time.Time   `json:"updatedAt,omitzero"`
}

// Condition is a Kubernetes metav1.Condition as agents send it.
type Condition struct {
	Type               string    `json:"type"`
	Status             string    `json:"status"`
	Reason             string    `json:"reason,omitempty"`
	Message            string    `json:"message,omitempty"`
	LastTransitionTime time.Time `json:"lastTransitionTime,omitzero"`
	ObservedGeneration int64     `json:"observedGeneration,omitempty"`
}

// HeartbeatInterval is how often agents send ClusterHeartbeat (the public
// operator sends one about every minute). A cluster is silent after
// SilentAfterHeartbeats intervals without one.
const (
	HeartbeatInterval     = time.Minute
	SilentAfterHeartbeats = 3
)

// Silent reports whether an active cluster has not sent a heartbeat for
// SilentAfterHeartbeats intervals. Clusters that never registered are not
// silent: they are pending.
func (c *Cluster) Silent(now time.Time) bool {
	if c.State != ClusterActive {
		return false
	}
	last := c.Status.LastHeartbeatAt
	if last.IsZero() {
		last = c.RegisteredAt
	}
	return now.Sub(last) > SilentAfterHeartbeats*HeartbeatInterval
}

// FalseConditions returns the heartbeat conditions whose status is False.
func (c *Cluster) FalseConditions() []Condition {
	var out []Condition
	for _, cond := range c.Status.Conditions {
		if cond.Status == "False" {
			out = append(out, cond)
		}
	}
	return out
}

var (
	// dns1123Label is a Kubernetes namespace name.
	dns1123Label = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	// operationTemplate is "<type in lower camel case>.<engine>".
	operationTemplate = regexp.MustCompile(`^[a-z][A-Za-z0-9]*\.[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	// catalogEntry is an opaque catalog id: printable, no spaces.
	catalogEntry = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:/@+-]*$`)
)

// Normalize fills defaults, trims and de-duplicates lists, and validates the
// spec. The error names the field and the rule it broke.
func (s *ClusterSpec) Normalize() error {
	s.Name = strings.TrimSpace(s.Name)
	s.Organization = strings.TrimSpace(s.Organization)
	if s.Name == "" {
		return Errorf(CodeInvalid, "cluster name is required")
	}
	if len(s.Name) > 100 || strings.ContainsFunc(s.Name, isControl) {
		return Errorf(CodeInvalid, "cluster name %q must be at most 100 printable characters", s.Name)
	}
	if len(s.Organization) > 100 || strings.ContainsFunc(s.Organization, isControl) {
		return Errorf(CodeInvalid, "organization %q must be at most 100 printable characters", s.Organization)
	}
	labels, err := normalizeLabels(s.Labels)
	if err != nil {
		return err
	}
	s.Labels = labels
	if s.Mode == "" {
		s.Mode = ModePull
	}
	switch s.Mode {
	case ModePull, ModePush, ModeGitOps:
	default:
		return Errorf(CodeInvalid, "connectivity mode %q is not one of pull, push, gitops", s.Mode)
	}
	if s.AllowedNamespaces, err = normalizeList("allowed namespace", s.AllowedNamespaces, func(v string) bool {
		return len(v) <= 63 && dns1123Label.MatchString(v)
	}, "a Kubernetes namespace name (lowercase letters, digits and '-', at most 63 characters)"); err != nil {
		return err
	}
	if s.AllowedCatalogEntries, err = normalizeList("allowed catalog entry", s.AllowedCatalogEntries, func(v string) bool {
		return len(v) <= 253 && catalogEntry.MatchString(v)
	}, "a catalog id without spaces"); err != nil {
		return err
	}
	if s.AllowedOperationTemplates, err = normalizeList("allowed operation template", s.AllowedOperationTemplates, func(v string) bool {
		return len(v) <= 253 && operationTemplate.MatchString(v)
	}, "<type in lower camel case>.<engine>, for example backup.velero"); err != nil {
		return err
	}
	if err := s.PublicKey.normalize(); err != nil {
		return err
	}
	if s.Policy.RequireEncryptedPayloads && s.PublicKey == "" {
		return Errorf(CodePublicKeyRequired, "cluster %s has no public key to encrypt its payloads to: its agent sends one when it registers "+
			"(tether agent register does), or an admin sets one (tether cluster edit %s --public-key-file FILE, a JWK or PEM X25519/P-256 public key); "+
			"then turn encryption on", s.Name, s.Name)
	}
	return s.Policy.normalize()
}

func (p *Policy) normalize() error {
	if p.MaxAttempts == 0 {
		p.MaxAttempts = DefaultMaxAttempts
	}
	if p.LeaseSeconds < 0 || (p.LeaseSeconds > 0 && p.LeaseSeconds < MinLeaseSeconds) || p.LeaseSeconds > MaxLeaseSeconds {
		return Errorf(CodeInvalid, "lease seconds %d must be 0 (no automatic reclaim) or between %d and %d", p.LeaseSeconds, MinLeaseSeconds, MaxLeaseSeconds)
	}
	if p.MaxAttempts < 1 || p.MaxAttempts > MaxMaxAttempts {
		return Errorf(CodeInvalid, "max attempts %d must be between 1 and %d", p.MaxAttempts, MaxMaxAttempts)
	}
	caps, err := normalizeList("required capability", p.RequiredCapabilities, func(v string) bool {
		return slices.Contains(KnownCapabilities, v)
	}, "one of "+strings.Join(KnownCapabilities, ", "))
	if err != nil {
		return err
	}
	p.RequiredCapabilities = caps
	return nil
}

// DefaultPolicy is the policy of a cluster created without one.
func DefaultPolicy() Policy {
	return Policy{LeaseSeconds: DefaultLeaseSeconds, MaxAttempts: DefaultMaxAttempts, RequiredCapabilities: []string{}}
}

// normalizeList trims, drops empties, de-duplicates (keeping order) and checks
// every value; "*" is always accepted.
func normalizeList(what string, in []string, ok func(string) bool, rule string) ([]string, error) {
	out := make([]string, 0, len(in))
	for _, v := range in {
		v = strings.TrimSpace(v)
		if v == "" || slices.Contains(out, v) {
			continue
		}
		if v != Wildcard && !ok(v) {
			return nil, Errorf(CodeInvalid, "%s %q is not valid: expected %s, or * for all", what, v, rule)
		}
		out = append(out, v)
	}
	return out, nil
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// allows reports whether an allowlist admits value.
func allows(list []string, value string) bool {
	return slices.Contains(list, Wildcard) || slices.Contains(list, value)
}
