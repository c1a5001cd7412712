package seal

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

func TestParseKey(t *testing.T) {
	t.Parallel()
	// Bytes that differ between alphabets, then bytes enough to be strong.
	key := []byte{0xfb, 0xff, 0x01, 0xfb, 0xff, 0x01}
	for i := len(key); i < KeySize; i++ {
		key = append(key, byte(i*37))
	}

	t.Run("every base64 form of 32 bytes is accepted", func(t *testing.T) {
		t.Parallel()
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			got, err := ParseKey(" " + enc.EncodeToString(key) + "\n")
			if err != nil {
				t.Fatalf("%s: %v", enc.EncodeToString(key), err)
			}
			if !bytes.Equal(got, key) {
				t.Fatalf("got %x, want %x", got, key)
			}
		}
	})

	t.Run("a generated key parses", func(t *testing.T) {
		t.Parallel()
		a, err := ParseKey(GenerateKey())
		if err != nil {
			t.Fatal(err)
		}
		b, _ := ParseKey(GenerateKey())
		if bytes.Equal(a, b) {
			t.Fatal("two generated keys are equal")
		}
	})

	t.Run("a weak key is refused", func(t *testing.T) {
		t.Parallel()
		for name, k := range map[string][]byte{
			"all zeros":        make([]byte, KeySize),
			"one byte":         bytes.Repeat([]byte{0x41}, KeySize),
			"a short pattern":  bytes.Repeat([]byte("abcd"), KeySize/4),
			"a repeated word":  bytes.Repeat([]byte("password"), KeySize/8),
			"fifteen distinct": append(bytes.Repeat([]byte("1"), 17), "123456789abcdef"...),
		} {
			_, err := ParseKey(base64.StdEncoding.EncodeToString(k))
			if err == nil || !strings.Contains(err.Error(), "weak") {
				t.Errorf("%s: %v, want a refusal as weak", name, err)
			}
		}
	})

	t.Run("a wrong length or bad text names the rule and not the key", func(t *testing.T) {
		t.Parallel()
		for _, s := range []string{
			base64.StdEncoding.EncodeToString([]byte("sixteen-byte-key")),
			"this-is-not*base64-at-all-secret",
			"",
		} {
			_, err := ParseKey(s)
			if err == nil {
				t.Fatalf("ParseKey(%q) succeeded", s)
			}
			if !strings.Contains(err.Error(), "32 bytes") {
				t.Errorf("error %q does not state the rule", err)
			}
			if s != "" && strings.Contains(err.Error(), s) {
				t.Errorf("error %q quotes the key", err)
			}
		}
	})
}

func TestLoadOrCreateKeyFile(t *testing.T) {
	t.Parallel()

	t.Run("a missing file is created once and read back", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "data", "seal.key")
		first, err := LoadOrCreateKeyFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(first) != KeySize {
			t.Fatalf("key has %d bytes", len(first))
		}
		again, err := LoadOrCreateKeyFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(first, again) {
			t.Fatal("second load returned another key")
		}
		if runtime.GOOS != "windows" {
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if perm := fi.Mode().Perm(); perm != 0o600 {
				t.Fatalf("key file mode %v, want 0600", perm)
			}
		}
		entries, _ := os.ReadDir(filepath.Dir(path))
		if len(entries) != 1 {
			t.Fatalf("directory holds %d files, want only the key", len(entries))
		}
	})

	t.Run("processes starting together agree on one key", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "seal.key")
		keys := make([][]byte, 8)
		var wg sync.WaitGroup
		for i := range keys {
			wg.Go(func() {
				k, err := LoadOrCreateKeyFile(path)
				if err != nil {
					t.Error(err)
				}
				keys[i] = k
			})
		}
		wg.Wait()
		for _, k := range keys[1:] {
			if !bytes.Equal(k, keys[0]) {
				t.Fatal("concurrent loads returned different keys")
			}
		}
	})

	t.Run("an existing key file is read as it is", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "seal.key")
		want := GenerateKey()
		if err := os.WriteFile(path, []byte(want+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := LoadOrCreateKeyFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if base64.StdEncoding.EncodeToString(got) != want {
			t.Fatal("key differs from the file's")
		}
	})

	t.Run("a damaged key file is an error naming the file", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "seal.key")
		if err := os.WriteFile(path, []byte("short"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := LoadOrCreateKeyFile(path)
		if err == nil || !strings.Contains(err.Error(), path) || strings.Contains(err.Error(), "short") {
			t.Fatalf("err = %v", err)
		}
	})
}
