package seal

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

func newSealer(t *testing.T) *Sealer {
	t.Helper()
	key, err := ParseKey(GenerateKey())
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSeal(t *testing.T) {
	t.Parallel()
	const aad = "j.sub.rg.coll.job"
	secret := []byte("sv=2015-04-05&sig=very-secret-signature")

	t.Run("a sealed value opens to the plaintext", func(t *testing.T) {
		t.Parallel()
		s := newSealer(t)
		sealed := s.Seal(secret, aad)
		if !IsSealed(sealed) {
			t.Fatalf("sealed value %q lacks the prefix", sealed)
		}
		got, err := s.Open(sealed, aad)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, secret) {
			t.Fatalf("opened %q, want %q", got, secret)
		}
	})

	t.Run("an empty plaintext round-trips", func(t *testing.T) {
		t.Parallel()
		s := newSealer(t)
		got, err := s.Open(s.Seal(nil, aad), aad)
		if err != nil || len(got) != 0 {
			t.Fatalf("got %q, %v", got, err)
		}
	})

	t.Run("sealing twice gives different values", func(t *testing.T) {
		t.Parallel()
		s := newSealer(t)
		first, second := s.Seal(secret, aad), s.Seal(secret, aad)
		if first == second {
			t.Fatal("two seals of one plaintext are equal: the nonce is not random")
		}
	})

	t.Run("the sealed value holds no part of the secret", func(t *testing.T) {
		t.Parallel()
		s := newSealer(t)
		sealed := s.Seal(secret, aad)
		for _, part := range []string{"very-secret", "signature", "sv=2015"} {
			if strings.Contains(sealed, part) {
				t.Fatalf("sealed value %q contains %q", sealed, part)
			}
		}
	})

	t.Run("a tampered value does not open", func(t *testing.T) {
		t.Parallel()
		s := newSealer(t)
		sealed := s.Seal(secret, aad)
		raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(sealed, Prefix))
		if err != nil {
			t.Fatal(err)
		}
		for i := range raw {
			changed := bytes.Clone(raw)
			changed[i] ^= 0x01
			_, err := s.Open(Prefix+base64.StdEncoding.EncodeToString(changed), aad)
			if !errors.Is(err, ErrCannotOpen) {
				t.Fatalf("flipping byte %d: err = %v, want ErrCannotOpen", i, err)
			}
		}
	})

	t.Run("a truncated or garbled value is an error, not a panic", func(t *testing.T) {
		t.Parallel()
		s := newSealer(t)
		for _, v := range []string{Prefix, Prefix + "AAAA", Prefix + "not base64!", s.Seal(secret, aad)[:20]} {
			if _, err := s.Open(v, aad); !errors.Is(err, ErrCannotOpen) {
				t.Errorf("Open(%q) err = %v, want ErrCannotOpen", v, err)
			}
		}
	})

	t.Run("a value sealed for other aad does not open", func(t *testing.T) {
		t.Parallel()
		s := newSealer(t)
		if _, err := s.Open(s.Seal(secret, aad), "j.sub.rg.coll.other"); !errors.Is(err, ErrCannotOpen) {
			t.Fatalf("err = %v, want ErrCannotOpen", err)
		}
	})

	t.Run("a value sealed with another key does not open", func(t *testing.T) {
		t.Parallel()
		if _, err := newSealer(t).Open(newSealer(t).Seal(secret, aad), aad); !errors.Is(err, ErrCannotOpen) {
			t.Fatalf("err = %v, want ErrCannotOpen", err)
		}
	})

	t.Run("a plain string is not sealed", func(t *testing.T) {
		t.Parallel()
		if IsSealed("hunter2") {
			t.Fatal("IsSealed(hunter2) = true")
		}
		if _, err := newSealer(t).Open("hunter2", aad); !errors.Is(err, ErrNotSealed) {
			t.Fatalf("err = %v, want ErrNotSealed", err)
		}
	})

	t.Run("errors never quote the value", func(t *testing.T) {
		t.Parallel()
		s := newSealer(t)
		sealed := s.Seal(secret, aad)
		_, err := s.Open(sealed, "other")
		if err == nil || strings.Contains(err.Error(), strings.TrimPrefix(sealed, Prefix)[:16]) {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestNewRejectsAShortKey(t *testing.T) {
	t.Parallel()
	if _, err := New(make([]byte, 16)); err == nil {
		t.Fatal("New accepted a 16-byte key")
	}
}
