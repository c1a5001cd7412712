package seal

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// keyRule is what a key must be, for errors that must not quote the key.
const keyRule = "a seal key must be the base64 (standard, or URL-safe without padding) of 32 bytes, such as the output of `openssl rand -base64 32`"

// ParseKey decodes a base64 key of KeySize bytes, in the standard alphabet
// (padded or not) or the URL-safe one (unpadded or not). Surrounding white
// space is ignored, so a key file may end with a newline. The error states
// the rule and never quotes s.
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	for _, enc := range []*base64.Encoding{
		base64.StdEncoding, base64.RawURLEncoding, base64.RawStdEncoding, base64.URLEncoding,
	} {
		key, err := enc.DecodeString(s)
		if err != nil {
			continue
		}
		if len(key) != KeySize {
			return nil, fmt.Errorf("seal key decodes to %d bytes: %s", len(key), keyRule)
		}
		if weak(key) {
			return nil, errors.New("seal key is weak (too few distinct bytes, such as all zeros or a repeated pattern): " + keyRule)
		}
		return key, nil
	}
	return nil, errors.New("seal key is not valid base64: " + keyRule)
}

// minDistinctBytes is the fewest distinct byte values a key may hold. 32
// random bytes hold about 30; fewer than 16 happens by chance with a
// probability below 10^-20, and is the mark of a key typed by hand: all
// zeros, one byte repeated, a short pattern, a word.
const minDistinctBytes = 16

// weak reports whether key has fewer than minDistinctBytes distinct bytes.
func weak(key []byte) bool {
	var seen [256]bool
	distinct := 0
	for _, b := range key {
		if !seen[b] {
			seen[b] = true
			distinct++
		}
	}
	return distinct < minDistinctBytes
}

// GenerateKey returns a new random key as standard base64.
func GenerateKey() string {
	key := make([]byte, KeySize)
	_, _ = rand.Read(key) // never fails; see Seal
	return base64.StdEncoding.EncodeToString(key)
}

// LoadOrCreateKeyFile reads the key in the file at path, or, when there is
// no such file, creates it (mode 0600, its directory 0700 if missing) with a
// new key and returns that. It is meant for `scheduler dev`, which keeps its
// key beside its data; production takes the key from configuration.
//
// Creation is atomic: the key is written to a temporary file that is then
// hard-linked to path, so two processes starting together agree on one key
// and no reader ever sees a partly written file.
func LoadOrCreateKeyFile(path string) ([]byte, error) {
	key, err := readKeyFile(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return key, err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the directory of seal key file %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(dir, ".seal-key-*")
	if err != nil {
		return nil, fmt.Errorf("creating seal key file %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	// CreateTemp makes the file 0600 already; say so for the reader.
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("creating seal key file %s: %w", path, err)
	}
	_, err = tmp.WriteString(GenerateKey() + "\n")
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("writing seal key file %s: %w", path, err)
	}
	// Link fails when path exists: another process created it first, and
	// its key is the one to use.
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("creating seal key file %s: %w", path, err)
	}
	return readKeyFile(path)
}

func readKeyFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading seal key file: %w", err)
	}
	key, err := ParseKey(string(b))
	if err != nil {
		return nil, fmt.Errorf("seal key file %s: %w", path, err)
	}
	return key, nil
}
