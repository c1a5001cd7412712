package api

import (
	"context"
	"errors"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestATokenFileHoldsHashesNotTokens(t *testing.T) {
	t.Parallel()
	token := NewToken()
	if len(token) < MinTokenLength || CheckToken(token) != nil {
		t.Fatalf("a new token of %d characters", len(token))
	}
	if NewToken() == token {
		t.Fatal("two new tokens are the same")
	}
	entry := TokenEntry{Name: "ci", SHA256: HashToken(token), Role: "writer", Scopes: []string{"/subscriptions/prod"}}
	data, err := yaml.Marshal(tokenFile{Tokens: []TokenEntry{entry}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), token) {
		t.Fatalf("the file holds the token:\n%s", data)
	}
	tokens, err := ParseTokens(data)
	if err != nil {
		t.Fatal(err)
	}
	p, err := tokens.Authenticate(context.Background(), token)
	if err != nil || p.Name != "token:ci" || len(p.Grants) != 1 || p.Grants[0] != (Grant{RoleWriter, Scope{Subscription: "prod"}}) {
		t.Fatalf("%+v, %v", p, err)
	}
	if _, err := tokens.Authenticate(context.Background(), HashToken(token)); !errors.Is(err, ErrUnknownToken) {
		t.Fatalf("the hash itself is accepted as a token: %v", err)
	}
}

func TestShortTokensAreRefused(t *testing.T) {
	t.Parallel()
	short := strings.Repeat("x", MinTokenLength-1)
	if err := CheckToken(short); err == nil || strings.Contains(err.Error(), short) || !strings.Contains(err.Error(), "at least 32") {
		t.Fatalf("CheckToken: %v", err)
	}
	// A short token whose hash is in a file is refused all the same.
	tokens, err := ParseTokens([]byte("tokens:\n  - {name: short, sha256: " + HashToken(short) + ", role: reader, scopes: ['*']}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tokens.Authenticate(context.Background(), short); !errors.Is(err, ErrUnknownToken) {
		t.Fatalf("a short token is accepted: %v", err)
	}
	if _, err := OperatorTokens([]string{short}).Authenticate(context.Background(), short); !errors.Is(err, ErrUnknownToken) {
		t.Fatalf("a short flat token is accepted: %v", err)
	}
}

func TestTokenFilesAreCheckedEntryByEntry(t *testing.T) {
	t.Parallel()
	hash := HashToken(strings.Repeat("a", 40))
	for _, tt := range []struct {
		name, file, says string
	}{
		{"a missing name", "tokens:\n  - {sha256: " + hash + ", role: reader, scopes: ['*']}", "tokens[0]: name: required"},
		{"a hash that is not hex", "tokens:\n  - {name: a, sha256: zz, role: reader, scopes: ['*']}", "tokens[0] (a): sha256: must be the 64 hex digits"},
		{"an unknown role", "tokens:\n  - {name: a, sha256: " + hash + ", role: admin, scopes: ['*']}", `tokens[0] (a): role: "admin" is not one of reader, writer, operator`},
		{"no scope", "tokens:\n  - {name: a, sha256: " + hash + ", role: reader}", "tokens[0] (a): scopes: at least one is required"},
		{"a bad scope", "tokens:\n  - {name: a, sha256: " + hash + ", role: reader, scopes: ['/subscriptions/a', '/jobs']}", "tokens[0] (a): scopes[1]: scope"},
		{"two tokens of one name", "tokens:\n  - {name: a, sha256: " + hash + ", role: reader, scopes: ['*']}\n  - {name: A, sha256: " + HashToken(strings.Repeat("b", 40)) + ", role: reader, scopes: ['*']}", "tokens[1] (A): name: another token has this name"},
		{"one token twice", "tokens:\n  - {name: a, sha256: " + hash + ", role: reader, scopes: ['*']}\n  - {name: b, sha256: " + strings.ToUpper(hash) + ", role: reader, scopes: ['*']}", "tokens[1] (b): sha256: token:a has this hash already"},
		{"a token in clear", "tokens:\n  - {name: a, token: secret, role: reader, scopes: ['*']}", "field token not found"},
		{"not a list", "tokens: 3", "is not a YAML document"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseTokens([]byte(tt.file))
			if err == nil || !strings.Contains(err.Error(), tt.says) {
				t.Fatalf("error %v, want one saying %q", err, tt.says)
			}
		})
	}
	t.Run("an empty file holds no token", func(t *testing.T) {
		tokens, err := ParseTokens(nil)
		if err != nil || tokens.Len() != 0 {
			t.Fatalf("%v, %v", tokens, err)
		}
	})
	t.Run("JSON is read too", func(t *testing.T) {
		tokens, err := ParseTokens([]byte(`{"tokens": [{"name": "a", "sha256": "` + hash + `", "role": "operator", "scopes": ["*"]}]}`))
		if err != nil || tokens.Len() != 1 {
			t.Fatalf("%v, %v", tokens, err)
		}
	})
}
