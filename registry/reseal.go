package registry

import (
	"context"
	"fmt"
	"strings"
)

// Key rotation (tether keys rotate, tether keys retire): every sealed value
// is re-sealed under the key ring's primary key, page by page, each page one
// transaction of compare-and-swaps, so that serving goes on: a value is
// always sealed under a key the ring holds (the old key stays until no value
// uses it), and a value changed meanwhile is left alone.

// DefaultResealBatch is how many values one transaction re-seals.
const DefaultResealBatch = 500

// AuditKeysReseal: the sealed values were re-sealed under a new key.
const AuditKeysReseal = "keys.reseal"

func (r *Registry) rotatingKeyring() (RotatingKeyring, error) {
	k, ok := r.cfg.Keyring.(RotatingKeyring)
	if !ok || k == nil {
		return nil, Errorf(CodeUnavailable, "this tether has no key file to rotate (start it with --key-file)")
	}
	return k, nil
}

// CheckKeyFileOpensStore refuses a key file that opens none of the secrets
// the store holds sealed: the wrong file (another database's, or one made by
// keys init next to a database copied from elsewhere) would, like a missing
// one, seal new secrets that the right file cannot open, and fail every
// agent whose HMAC key the right one sealed. It tries the first value of
// each kind, so a key retired too early for a few values does not stop a
// process that opens the rest.
func (r *Registry) CheckKeyFileOpensStore(ctx context.Context) error {
	var refused error
	for _, kind := range SealedKinds {
		page, err := r.store.SealedPage(ctx, kind, "", 1)
		if err != nil {
			return err
		}
		if len(page) == 0 {
			continue
		}
		_, err = r.cfg.Keyring.Open(page[0].Sealed, []byte(page[0].ID))
		if err == nil {
			return nil
		}
		if refused == nil {
			why := "does not open"
			if rk, ok := r.cfg.Keyring.(RotatingKeyring); ok && rk.SealedKeyID(page[0].Sealed) != "" {
				why = "is sealed with key " + rk.SealedKeyID(page[0].Sealed) + ", which the key file does not hold"
			}
			file := "the key file"
			if kf, ok := r.cfg.Keyring.(interface{ Path() string }); ok {
				file += " " + kf.Path()
			}
			refused = Errorf(CodeUnavailable, "%s opens none of the secrets the database holds (%s %s %s): is it this database's key file? "+
				"Give this process the one that sealed them (with PostgreSQL, every replica needs a copy of the same file)", file, kind, page[0].ID, why)
		}
	}
	return refused
}

// ResealReport says what Reseal did, per kind of value.
type ResealReport struct {
	PrimaryKeyID string             `json:"primaryKeyId"`
	Resealed     map[SealedKind]int `json:"resealed"`
	Total        int                `json:"total"`
}

// Reseal re-seals every stored value that is not sealed under the primary
// key, batch values per transaction (0: DefaultResealBatch). Admin only;
// audited when it changed anything.
func (r *Registry) Reseal(ctx context.Context, batch int) (*ResealReport, error) {
	if err := authorizeFleet(ctx, "the key file"); err != nil {
		return nil, err
	}
	keys, err := r.rotatingKeyring()
	if err != nil {
		return nil, err
	}
	if batch <= 0 {
		batch = DefaultResealBatch
	}
	primary, err := keys.PrimaryKeyID()
	if err != nil {
		return nil, err
	}
	rep := &ResealReport{PrimaryKeyID: primary, Resealed: map[SealedKind]int{}}
	for _, kind := range SealedKinds {
		after := ""
		for {
			page, err := r.store.SealedPage(ctx, kind, after, batch)
			if err != nil {
				return rep, err
			}
			if len(page) == 0 {
				break
			}
			after = page[len(page)-1].ID
			var swaps []SealedSwap
			for _, v := range page {
				if keys.SealedKeyID(v.Sealed) == primary {
					continue
				}
				pt, err := keys.Open(v.Sealed, []byte(v.ID))
				if err != nil {
					return rep, fmt.Errorf("re-seal %s %s: %w", kind, v.ID, err)
				}
				sealed, err := keys.Seal(pt, []byte(v.ID))
				if err != nil {
					return rep, err
				}
				swaps = append(swaps, SealedSwap{ID: v.ID, Old: v.Sealed, New: sealed})
			}
			if len(swaps) > 0 {
				n, err := r.store.SealedSwap(ctx, kind, swaps)
				if err != nil {
					return rep, err
				}
				rep.Resealed[kind] += n
				rep.Total += n
			}
			if len(page) < batch {
				break
			}
		}
	}
	if rep.Total > 0 {
		var parts []string
		for _, kind := range SealedKinds {
			if n := rep.Resealed[kind]; n > 0 {
				parts = append(parts, fmt.Sprintf("%s %d", kind, n))
			}
		}
		entry := r.auditEntry(ctx, AuditKeysReseal, "", "key", primary, "re-sealed under the primary key: "+strings.Join(parts, ", "))
		if err := r.store.AuditAppend(ctx, entry); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// SealedKeyUsage counts the stored sealed values by the key that sealed
// them ("" for values of the first format, which name no key).
func (r *Registry) SealedKeyUsage(ctx context.Context) (map[string]int, error) {
	return r.sealedKeyUsage(ctx, false)
}

// CheckKeyring is SealedKeyUsage that also opens one value sealed by each
// key: a key file that cannot open what the database holds (the wrong
// file, a key missing) is said before anything is changed.
func (r *Registry) CheckKeyring(ctx context.Context) (map[string]int, error) {
	return r.sealedKeyUsage(ctx, true)
}

func (r *Registry) sealedKeyUsage(ctx context.Context, open bool) (map[string]int, error) {
	if err := authorizeFleet(ctx, "the key file"); err != nil {
		return nil, err
	}
	keys, err := r.rotatingKeyring()
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, kind := range SealedKinds {
		after := ""
		for {
			page, err := r.store.SealedPage(ctx, kind, after, DefaultResealBatch)
			if err != nil {
				return nil, err
			}
			for _, v := range page {
				id := keys.SealedKeyID(v.Sealed)
				if open && out[id] == 0 {
					if _, err := keys.Open(v.Sealed, []byte(v.ID)); err != nil {
						return nil, Errorf(CodeInvalid, "the key file cannot open what the database holds (%s %s: %s): is it this database's key file? Nothing was changed", kind, v.ID, ErrorMessage(err))
					}
				}
				out[id]++
			}
			if len(page) < DefaultResealBatch {
				break
			}
			after = page[len(page)-1].ID
		}
	}
	return out, nil
}
