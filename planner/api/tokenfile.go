package api

import (
	"cmp"
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/jobscheduler/scheduler/internal/startstop"
)

// TokenFileConfig configures a TokenFile.
type TokenFileConfig struct {
	// Path of the token file (see TokenEntry). Required.
	Path string
	// Interval between two reads of the file. Defaults to 5s.
	Interval time.Duration
	// Logger receives a line per reload and per file that cannot be
	// loaded. Defaults to slog.Default().
	Logger *slog.Logger
}

// TokenFile authenticates the tokens of a token file, read again every
// Interval once started: a file whose content changed replaces the tokens
// at once; a file that cannot be read or is not valid is logged, and the
// tokens loaded before stay in force.
type TokenFile struct {
	startstop.Loop
	cfg    TokenFileConfig
	tokens atomic.Pointer[Tokens]
	// seen is the SHA-256 of the content last read, loaded or not, and
	// readErr the last error reading the file; only the loop touches them
	// once it started.
	seen    [sha256.Size]byte
	readErr string
}

// OpenTokenFile reads the token file. A file that cannot be read or is
// not valid is an error: the planner does not start without its tokens.
func OpenTokenFile(cfg TokenFileConfig) (*TokenFile, error) {
	cfg.Interval = cmp.Or(cfg.Interval, 5*time.Second)
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	data, err := os.ReadFile(cfg.Path)
	if err != nil {
		return nil, fmt.Errorf("reading the token file: %w", err)
	}
	t, err := ParseTokens(data)
	if err != nil {
		return nil, fmt.Errorf("the token file %s: %w", cfg.Path, err)
	}
	f := &TokenFile{cfg: cfg, seen: sha256.Sum256(data)}
	f.tokens.Store(t)
	return f, nil
}

// Start reads the file again every Interval until Stop.
func (f *TokenFile) Start(ctx context.Context) error {
	return f.Loop.Start(ctx, func(ctx context.Context) {
		startstop.Every(ctx, f.cfg.Interval, func(context.Context) { f.reload() })
	})
}

// Authenticate returns the principal of a token of the file as last
// loaded.
func (f *TokenFile) Authenticate(ctx context.Context, token string) (Principal, error) {
	return f.tokens.Load().Authenticate(ctx, token)
}

// reload reads the file and loads it when its content changed.
func (f *TokenFile) reload() {
	log := f.cfg.Logger.With(slog.String("file", f.cfg.Path))
	data, err := os.ReadFile(f.cfg.Path)
	if err != nil {
		if err.Error() != f.readErr {
			log.Error("reading the token file; the tokens loaded before stay in force", slog.String("error", err.Error()))
		}
		f.readErr = err.Error()
		return
	}
	f.readErr = ""
	sum := sha256.Sum256(data)
	if sum == f.seen {
		return
	}
	f.seen = sum
	t, err := ParseTokens(data)
	if err != nil {
		log.Error("the token file is not valid; the tokens loaded before stay in force", slog.String("error", err.Error()))
		return
	}
	f.tokens.Store(t)
	log.Info("token file loaded again", slog.Int("tokens", t.Len()))
}
