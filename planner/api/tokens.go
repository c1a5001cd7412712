package api

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"

	"gopkg.in/yaml.v3"
)

// MinTokenLength is the shortest bearer token the API accepts. A token of
// 32 random characters cannot be guessed, and neither can it be found
// again from its SHA-256, which is why a token file may hold the hash
// unsalted.
const MinTokenLength = 32

// TokenEntry is one token of a token file:
//
//	tokens:
//	  - name: deploy-web          # in logs as token:deploy-web
//	    sha256: 5e884898da28...   # hex SHA-256 of the token
//	    role: writer              # reader, writer or operator
//	    scopes:                   # where the role holds (see ParseScope)
//	      - /subscriptions/prod/resourceGroups/web
//	      - /subscriptions/staging
type TokenEntry struct {
	// Name identifies the token in logs, as "token:<name>".
	Name string `yaml:"name" json:"name"`
	// SHA256 is the hex SHA-256 of the token (HashToken); the token itself
	// is never stored.
	SHA256 string `yaml:"sha256" json:"sha256"`
	// Role is reader, writer or operator.
	Role string `yaml:"role" json:"role"`
	// Scopes are the parts of the resource tree where the role holds.
	Scopes []string `yaml:"scopes" json:"scopes"`
}

// tokenFile is the document a token file holds.
type tokenFile struct {
	Tokens []TokenEntry `yaml:"tokens"`
}

// Tokens are bearer tokens, each known by its SHA-256.
type Tokens struct {
	byHash map[[sha256.Size]byte]Principal
}

// ParseTokens reads a token file: YAML (or JSON, which YAML reads too)
// holding a list "tokens" of TokenEntry. An empty file holds no token.
// The error names the entry and the field of each problem.
func ParseTokens(data []byte) (*Tokens, error) {
	var doc tokenFile
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("the token file is not a YAML document with a list \"tokens\": %w", err)
	}
	t := &Tokens{byHash: make(map[[sha256.Size]byte]Principal, len(doc.Tokens))}
	names := map[string]bool{}
	var errs []error
	for i, e := range doc.Tokens {
		at := fmt.Sprintf("tokens[%d]", i)
		if e.Name != "" {
			at += " (" + e.Name + ")"
		}
		p, hash, problems := e.principal()
		for _, err := range problems {
			errs = append(errs, fmt.Errorf("%s: %w", at, err))
		}
		if len(problems) > 0 {
			continue
		}
		switch {
		case names[strings.ToLower(e.Name)]:
			errs = append(errs, fmt.Errorf("%s: name: another token has this name", at))
		case t.byHash[hash].Name != "":
			errs = append(errs, fmt.Errorf("%s: sha256: %s has this hash already; give each client a token of its own", at, t.byHash[hash].Name))
		}
		names[strings.ToLower(e.Name)] = true
		t.byHash[hash] = p
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return t, nil
}

// principal checks the entry and returns the principal and the hash of its
// token, or every problem of the entry.
func (e TokenEntry) principal() (Principal, [sha256.Size]byte, []error) {
	var hash [sha256.Size]byte
	var errs []error
	if e.Name == "" || len(e.Name) > 128 || strings.IndexFunc(e.Name, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
		errs = append(errs, errors.New("name: required, 1 to 128 printable characters"))
	}
	if b, err := hex.DecodeString(e.SHA256); err != nil || len(b) != sha256.Size {
		errs = append(errs, errors.New("sha256: must be the 64 hex digits of the token's SHA-256 (see scheduler token new)"))
	} else {
		copy(hash[:], b)
	}
	role, err := ParseRole(e.Role)
	if err != nil {
		errs = append(errs, fmt.Errorf("role: %w", err))
	}
	if len(e.Scopes) == 0 {
		errs = append(errs, errors.New(`scopes: at least one is required ("*" for everything)`))
	}
	p := Principal{Name: "token:" + e.Name}
	for i, s := range e.Scopes {
		scope, err := ParseScope(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("scopes[%d]: %w", i, err))
			continue
		}
		p.Grants = append(p.Grants, Grant{Role: role, Scope: scope})
	}
	return p, hash, errs
}

// OperatorTokens returns flat tokens, as --api-tokens gives them: each is
// an operator over everything, named "api-tokens#<n>" in logs (n from 1).
// Tokens shorter than MinTokenLength are refused before (CheckToken).
func OperatorTokens(tokens []string) *Tokens {
	t := &Tokens{byHash: make(map[[sha256.Size]byte]Principal, len(tokens))}
	for i, token := range tokens {
		t.byHash[sha256.Sum256([]byte(token))] = Principal{Name: fmt.Sprintf("api-tokens#%d", i+1), Grants: []Grant{{Role: RoleOperator}}}
	}
	return t
}

// Len returns the number of tokens.
func (t *Tokens) Len() int { return len(t.byHash) }

// Authenticate returns the principal of a known token. The token is looked
// up by its SHA-256: the time the lookup takes tells nothing of the
// tokens held.
func (t *Tokens) Authenticate(_ context.Context, token string) (Principal, error) {
	if len(token) < MinTokenLength {
		return Principal{}, fmt.Errorf("%w: shorter than %d characters", ErrUnknownToken, MinTokenLength)
	}
	p, ok := t.byHash[sha256.Sum256([]byte(token))]
	if !ok {
		return Principal{}, ErrUnknownToken
	}
	return p, nil
}

// HashToken returns the hex SHA-256 of a token, as a token file holds it.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// NewToken returns a new random token: 32 random bytes in unpadded
// base64url, 43 characters.
func NewToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails: crypto/rand.Read panics rather than return an error
	return base64.RawURLEncoding.EncodeToString(b)
}

// CheckToken refuses a token shorter than MinTokenLength, without quoting
// it.
func CheckToken(token string) error {
	if len(token) < MinTokenLength {
		return fmt.Errorf("a token of %d characters is too short: tokens must have at least %d (generate one with scheduler token new)", len(token), MinTokenLength)
	}
	return nil
}

// MarshalEntry checks the entry and returns it as YAML, an item of the
// list "tokens" of a token file.
func (e TokenEntry) MarshalEntry() ([]byte, error) {
	if _, _, problems := e.principal(); len(problems) > 0 {
		return nil, errors.Join(problems...)
	}
	return yaml.Marshal([]TokenEntry{e})
}
