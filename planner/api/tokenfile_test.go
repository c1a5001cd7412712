package api

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jobscheduler/scheduler/internal/testkit"
)

func TestTheTokenFileIsLoadedAgainWhenItChanges(t *testing.T) {
	t.Parallel()
	b := setupAccess(t, Config{}, operator)
	if err := b.file.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.file.Stop)
	list := collections("subA", "rg")
	write := func(text string) {
		t.Helper()
		// Written aside and renamed, as a configuration system does, so
		// that no read sees half a file.
		tmp := b.path + ".new"
		if err := os.WriteFile(tmp, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, b.path); err != nil {
			t.Fatal(err)
		}
	}
	answers := func(f fileToken, status int) func() bool {
		return func() bool { return b.as(t, f, "GET", list, "").status == status }
	}
	b.mustAs(t, readerA, http.StatusUnauthorized, "GET", list, "")

	t.Run("a token added is accepted", func(t *testing.T) {
		write(tokenFileText(operator, readerA))
		testkit.Eventually(t, 10*time.Second, answers(readerA, http.StatusOK), "the token added is still refused")
		b.mustAs(t, operator, http.StatusOK, "GET", list, "")
	})
	t.Run("a broken file is logged and the tokens before stay", func(t *testing.T) {
		write("tokens:\n  - {name: x, sha256: nothex, role: reader, scopes: ['*']}\n")
		testkit.Eventually(t, 10*time.Second, func() bool {
			return b.logs.Contains("level=ERROR", "the token file is not valid", "tokens[0] (x): sha256")
		}, "the broken file was not logged:\n%s", b.logs.String())
		b.mustAs(t, readerA, http.StatusOK, "GET", list, "")
		b.mustAs(t, operator, http.StatusOK, "GET", list, "")
	})
	t.Run("a file that is gone is logged and the tokens before stay", func(t *testing.T) {
		if err := os.Remove(b.path); err != nil {
			t.Fatal(err)
		}
		testkit.Eventually(t, 10*time.Second, func() bool {
			return b.logs.Contains("level=ERROR", "reading the token file")
		}, "the missing file was not logged:\n%s", b.logs.String())
		b.mustAs(t, readerA, http.StatusOK, "GET", list, "")
	})
	t.Run("a token removed is refused", func(t *testing.T) {
		write(tokenFileText(readerA))
		testkit.Eventually(t, 10*time.Second, answers(operator, http.StatusUnauthorized), "the token removed is still accepted")
		b.mustAs(t, readerA, http.StatusOK, "GET", list, "")
		if !b.logs.Contains("token file loaded again", "tokens=1") {
			t.Fatalf("the reload was not logged:\n%s", b.logs.String())
		}
	})
}

func TestATokenFileThatCannotBeLoadedStopsTheStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, err := OpenTokenFile(TokenFileConfig{Path: filepath.Join(dir, "missing.yaml")}); err == nil || !strings.Contains(err.Error(), "reading the token file") {
		t.Fatalf("a missing file: %v", err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("tokens:\n  - {name: x, role: boss}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := OpenTokenFile(TokenFileConfig{Path: bad})
	if err == nil || !strings.Contains(err.Error(), "tokens[0] (x): role") || !strings.Contains(err.Error(), "sha256") {
		t.Fatalf("a broken file: %v", err)
	}
}
