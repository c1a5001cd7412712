package api

import (
	"context"
	"errors"
	"log/slog"

	"github.com/jobscheduler/scheduler/contracts"
)

// What the web console (planner/console) needs of the API beside its
// routes. The console makes every read and change through ServeHTTP with
// the viewer's token; these only tell it what to show.

// RequiresToken reports whether requests must carry a bearer token: false
// only for an API without authentication (loopback).
func (s *Server) RequiresToken() bool { return len(s.cfg.Authenticators) > 0 }

// ServesHost reports whether host (a Host header) names a host the API,
// and the console beside it, is served as.
func (s *Server) ServesHost(host string) bool {
	return s.guard.hosts == nil || s.guard.hosts[normalHost(host)]
}

// ErrTokenRefused is RoleAt's answer for a token the API does not accept.
var ErrTokenRefused = errors.New("the bearer token is not accepted")

// RoleAt returns the highest role token holds over the collection (0 for
// none), so that a page shows only the actions its viewer may take; the
// API still decides each request. token is ignored when the API asks for
// none. An error wraps ErrTokenRefused, or says the token cannot be
// checked now.
func (s *Server) RoleAt(ctx context.Context, token string, ref contracts.CollectionRef) (Role, error) {
	p, err := s.principal(ctx, token)
	if err != nil {
		return 0, err
	}
	return p.roleAt(ref), nil
}

// principal returns the principal of token.
func (s *Server) principal(ctx context.Context, token string) (Principal, error) {
	if !s.RequiresToken() {
		return anonymous, nil
	}
	var unavailableErr error
	for _, a := range s.cfg.Authenticators {
		p, err := a.Authenticate(ctx, token)
		switch {
		case err == nil:
			return p, nil
		case errors.Is(err, ErrUnknownToken):
			// The reason is for whoever runs the planner; the token is
			// never in it.
			s.cfg.Logger.Debug("bearer token refused", slog.String("reason", err.Error()))
		default:
			unavailableErr = err
		}
	}
	if unavailableErr != nil {
		return Principal{}, unavailableErr
	}
	return Principal{}, ErrTokenRefused
}
