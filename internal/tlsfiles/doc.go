// Package tlsfiles loads the certificates a role presents and trusts from
// PEM files: a certificate and its key, read again when the files change so
// that a renewed certificate is served without a restart, and bundles of
// certificate authorities. Its errors name the setting (the flag) that gave
// a file, and never quote a file's content.
package tlsfiles
