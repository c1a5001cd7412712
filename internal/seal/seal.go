package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// Prefix starts every value Seal makes; "v2" names the format: AES-256-GCM
// with a 12-byte random nonce before the ciphertext, and for the secrets of
// an action, additional data that binds each to where it is sent (see
// SealAction).
const Prefix = "sealed:v2:"

// PrefixV1 starts a value sealed in format v1: the same cipher, but the
// secrets of an action were bound to the job and the field only, not to
// where they are sent. Only OpenStoredAction opens them.
const PrefixV1 = "sealed:v1:"

// KeySize is the length of a key in bytes (AES-256).
const KeySize = 32

var (
	// ErrNotSealed is returned by Open for a string that does not start with
	// Prefix.
	ErrNotSealed = errors.New("value is not sealed")
	// ErrFormatV1 is returned by Open and OpenAction for a value sealed in
	// format v1 (PrefixV1), which does not bind it to where it is sent.
	ErrFormatV1 = errors.New("value is sealed in format v1, which does not bind it to where it is sent")
	// ErrCannotOpen is returned by Open when a sealed value fails
	// authentication: it was sealed with another key or for other additional
	// data, or it was changed.
	ErrCannotOpen = errors.New("sealed value cannot be opened: other key, other additional data, or tampered")
)

// Sealer seals and opens values with one key. It is safe for concurrent use.
type Sealer struct {
	aead cipher.AEAD
}

// New returns a Sealer for a KeySize-byte key.
func New(key []byte) (*Sealer, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("seal key must be %d bytes, got %d", KeySize, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("creating AES cipher: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("creating GCM: %w", err)
	}
	return &Sealer{aead: aead}, nil
}

// Seal encrypts plaintext bound to aad and returns Prefix followed by the
// base64 of the nonce and the ciphertext. Each call draws a new random
// nonce, so sealing the same plaintext twice gives two different values.
func (s *Sealer) Seal(plaintext []byte, aad string) string {
	nonceSize := s.aead.NonceSize()
	buf := make([]byte, nonceSize, nonceSize+len(plaintext)+s.aead.Overhead())
	// crypto/rand.Read never returns an error (it crashes the program
	// instead), so the nonce is always random.
	_, _ = rand.Read(buf)
	buf = s.aead.Seal(buf, buf[:nonceSize], plaintext, []byte(aad))
	return Prefix + base64.StdEncoding.EncodeToString(buf)
}

// Open decrypts a value made by Seal with the same key and aad. It returns
// ErrFormatV1 for a value of format v1, ErrNotSealed for any other string
// without Prefix, and an error wrapping ErrCannotOpen for a value that was
// sealed with another key or aad or was changed.
func (s *Sealer) Open(sealed string, aad string) ([]byte, error) {
	if strings.HasPrefix(sealed, PrefixV1) {
		return nil, ErrFormatV1
	}
	return s.open(sealed, Prefix, aad)
}

// open decrypts a value of the format prefix names.
func (s *Sealer) open(sealed, prefix, aad string) ([]byte, error) {
	body, ok := strings.CutPrefix(sealed, prefix)
	if !ok {
		return nil, ErrNotSealed
	}
	raw, err := base64.StdEncoding.DecodeString(body)
	if err != nil {
		return nil, fmt.Errorf("%w: body is not valid base64", ErrCannotOpen)
	}
	nonceSize := s.aead.NonceSize()
	if len(raw) < nonceSize+s.aead.Overhead() {
		return nil, fmt.Errorf("%w: body is too short", ErrCannotOpen)
	}
	plaintext, err := s.aead.Open(nil, raw[:nonceSize], raw[nonceSize:], []byte(aad))
	if err != nil {
		// The GCM error says nothing more than "authentication failed".
		return nil, ErrCannotOpen
	}
	return plaintext, nil
}

// IsSealed reports whether s has the form of a sealed value, of either
// format. It does not check that s opens.
func IsSealed(s string) bool { return strings.HasPrefix(s, Prefix) || strings.HasPrefix(s, PrefixV1) }
