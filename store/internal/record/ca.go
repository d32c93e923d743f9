package record

// CACols are a certificate authority's columns.
const CACols = `id, cert_der, sealed_key, created_at, not_after, retired_at, trusted_until`
