package registry

import "context"

// ResealStore is the part of Store that tether keys rotate and retire use to
// re-seal every sealed value under the key ring's primary key.
type ResealStore interface {
	// SealedPage returns up to limit values of kind whose id is greater than
	// after, in id order.
	SealedPage(ctx context.Context, kind SealedKind, after string, limit int) ([]SealedValue, error)
	// SealedSwap replaces, in one transaction, each value of kind that is
	// still swap.Old by swap.New, and returns how many it replaced (a value
	// changed or deleted meanwhile is left alone).
	SealedSwap(ctx context.Context, kind SealedKind, swaps []SealedSwap) (int, error)
}

// SealedKind names a column that holds sealed values; each is bound (aad) to
// its row's id.
type SealedKind string

const (
	SealedHMACKey       SealedKind = "credential_hmac_key" // credentials.sealed_hmac
	SealedWebhookSecret SealedKind = "webhook_secret"      // webhooks.sealed_secret
	// SealedWebhookPrevious is a rotated webhook's previous secret.
	SealedWebhookPrevious SealedKind = "webhook_previous_secret" // webhooks.sealed_previous_secret
	SealedSigningKey      SealedKind = "signing_key"             // cluster_signing_keys.sealed_private
	SealedCAKey           SealedKind = "ca_key"                  // certificate_authorities.sealed_key
	SealedJobPayload      SealedKind = "job_payload"             // jobs.payload where payload_sealed
	SealedSSHHostKey      SealedKind = "ssh_host_key"            // ssh_host_keys.sealed_private
)

// SealedKinds is every kind, in the order tether keys re-seals them.
var SealedKinds = []SealedKind{SealedHMACKey, SealedWebhookSecret, SealedWebhookPrevious, SealedSigningKey, SealedCAKey, SealedJobPayload, SealedSSHHostKey}

// SealedValue is one sealed value and the id of its row.
type SealedValue struct {
	ID     string
	Sealed []byte
}

// SealedSwap is a compare-and-swap of one sealed value.
type SealedSwap struct {
	ID       string
	Old, New []byte
}
