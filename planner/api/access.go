package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/planner/store"
)

// Who may do what: every request is made by a principal (a token of the
// token file, an OpenID Connect subject, one of the flat --api-tokens, or
// the anonymous caller of an API without authentication), which holds
// grants: a role over a scope. A request is allowed when a grant whose
// scope covers its resource has the role its method needs. The decision
// is made from the path and the grants alone, before anything is read, so
// a 403 tells nothing of whether the resource exists.

// Role is what a grant allows within its scope; each role allows what the
// roles below it do.
type Role int

const (
	// RoleReader may GET collections, jobs, history and previews.
	RoleReader Role = iota + 1
	// RoleWriter may also create, change, delete, run, enable and disable,
	// within the operator's ceilings.
	RoleWriter
	// RoleOperator may do everything, beyond the ceilings too.
	RoleOperator
)

var roleNames = map[Role]string{RoleReader: "reader", RoleWriter: "writer", RoleOperator: "operator"}

func (r Role) String() string {
	if name, ok := roleNames[r]; ok {
		return name
	}
	return fmt.Sprintf("Role(%d)", int(r))
}

// ParseRole reads "reader", "writer" or "operator", in any case.
func ParseRole(s string) (Role, error) {
	for r, name := range roleNames {
		if strings.EqualFold(s, name) {
			return r, nil
		}
	}
	return 0, fmt.Errorf("%s is not one of reader, writer, operator", contracts.QuoteName(s))
}

// Scope is a part of the resource tree: a subscription, a resource group
// in it, or a job collection in that. An empty name stands for every name
// at its level ("*"), so the zero Scope is everything.
type Scope struct {
	Subscription, ResourceGroup, Collection string
}

// ParseScope reads a scope: "*" (everything), or
// "/subscriptions/{sub}", optionally followed by
// "/resourceGroups/{rg}" and "/jobCollections/{collection}" (the ARM form
// ".../providers/Microsoft.Scheduler/jobCollections/{collection}" too).
// Any name may be "*"; a level left out means every name below. Literal
// segments are matched without regard to case.
func ParseScope(s string) (Scope, error) {
	if s == "*" || s == "/" {
		return Scope{}, nil
	}
	seg := strings.Split(strings.Trim(s, "/"), "/")
	if len(seg) >= 6 && strings.EqualFold(seg[4], "providers") && strings.EqualFold(seg[5], "Microsoft.Scheduler") {
		seg = append(seg[:4:4], seg[6:]...)
	}
	labels := []string{"subscriptions", "resourceGroups", "jobCollections"}
	validate := []func(string) error{contracts.ValidateSubscription, contracts.ValidateResourceGroup,
		func(n string) error { return contracts.ValidateName("collection", n) }}
	if !strings.HasPrefix(s, "/") || len(seg)%2 != 0 || len(seg) > 6 {
		return Scope{}, fmt.Errorf("scope %s is not valid: use *, /subscriptions/{subscription}, "+
			"/subscriptions/{subscription}/resourceGroups/{resourceGroup} or "+
			"/subscriptions/{subscription}/resourceGroups/{resourceGroup}/jobCollections/{collection}", contracts.QuoteName(s))
	}
	names := make([]string, 3)
	for i := 0; i < len(seg); i += 2 {
		label, name := seg[i], seg[i+1]
		if !strings.EqualFold(label, labels[i/2]) {
			return Scope{}, fmt.Errorf("scope %s is not valid: its part %d must be %s, not %s", contracts.QuoteName(s), i/2+1, labels[i/2], contracts.QuoteName(label))
		}
		if name == "*" {
			continue
		}
		if err := validate[i/2](name); err != nil {
			return Scope{}, fmt.Errorf("scope %s is not valid: %w", contracts.QuoteName(s), err)
		}
		names[i/2] = name
	}
	return Scope{Subscription: names[0], ResourceGroup: names[1], Collection: names[2]}, nil
}

// String returns the scope as ParseScope reads it.
func (s Scope) String() string {
	if s == (Scope{}) {
		return "*"
	}
	out := "/subscriptions/" + orStar(s.Subscription)
	if s.ResourceGroup != "" || s.Collection != "" {
		out += "/resourceGroups/" + orStar(s.ResourceGroup)
	}
	if s.Collection != "" {
		out += "/jobCollections/" + s.Collection
	}
	return out
}

// orStar writes the empty name of a scope, every name, as "*".
func orStar(name string) string {
	if name == "" {
		return "*"
	}
	return name
}

// nameMatches reports whether a scope's name (empty for every name)
// matches a name of a path (empty when the path does not go that deep).
// Names are matched without regard to case, as the API matches them.
func nameMatches(scope, name string) bool {
	return scope == "" || strings.EqualFold(scope, name)
}

// covers reports whether the scope holds the collection.
func (s Scope) covers(ref contracts.CollectionRef) bool {
	return nameMatches(s.Subscription, ref.Subscription) && nameMatches(s.ResourceGroup, ref.ResourceGroup) &&
		nameMatches(s.Collection, ref.Collection)
}

// reaches reports whether the scope holds any collection of the
// subscription, or of its resource group rg when rg is not empty.
func (s Scope) reaches(sub, rg string) bool {
	return nameMatches(s.Subscription, sub) && (rg == "" || nameMatches(s.ResourceGroup, rg))
}

// Grant is a role over a scope.
type Grant struct {
	Role  Role
	Scope Scope
}

// ParseGrant reads "<role>:<scope>", such as
// "writer:/subscriptions/S/resourceGroups/R" or "reader:*".
func ParseGrant(s string) (Grant, error) {
	role, scope, ok := strings.Cut(s, ":")
	if !ok {
		return Grant{}, fmt.Errorf("grant %s is not <role>:<scope>", contracts.QuoteName(s))
	}
	r, err := ParseRole(role)
	if err != nil {
		return Grant{}, err
	}
	sc, err := ParseScope(scope)
	if err != nil {
		return Grant{}, err
	}
	return Grant{Role: r, Scope: sc}, nil
}

func (g Grant) String() string { return g.Role.String() + ":" + g.Scope.String() }

// Principal is who makes a request.
type Principal struct {
	// Name identifies the principal in logs, never the token:
	// "token:<name>" for the token file, "oidc:<subject>", "api-tokens#<n>"
	// for the n-th flat token, "anonymous" or "nats-intake".
	Name   string
	Grants []Grant
}

// anonymous makes every request of an API without authentication
// (loopback only): an operator over everything, as before scopes.
var anonymous = Principal{Name: "anonymous", Grants: []Grant{{Role: RoleOperator}}}

// intakePrincipal applies the definitions of the NATS intake (Apply):
// who may publish them is decided by the NATS server's permissions.
var intakePrincipal = Principal{Name: "nats-intake", Grants: []Grant{{Role: RoleWriter}}}

// roleAt returns the highest role the principal holds over the collection,
// or 0 for none.
func (p Principal) roleAt(ref contracts.CollectionRef) Role {
	var best Role
	for _, g := range p.Grants {
		if g.Role > best && g.Scope.covers(ref) {
			best = g.Role
		}
	}
	return best
}

// reaches reports whether the principal holds the role over some part of
// the subscription (or of its resource group rg when rg is not empty).
func (p Principal) reaches(role Role, sub, rg string) bool {
	return slices.ContainsFunc(p.Grants, func(g Grant) bool { return g.Role >= role && g.Scope.reaches(sub, rg) })
}

type principalKey struct{}

func withPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// principalOf returns the principal of a request; a context without one
// (a handler called outside ServeHTTP) has no grants.
func principalOf(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// Authenticator finds the principal a bearer token stands for.
type Authenticator interface {
	// Authenticate returns the principal of token; an error wrapping
	// ErrUnknownToken when it does not know the token, or another error
	// when it cannot tell now (its identity provider does not answer).
	Authenticate(ctx context.Context, token string) (Principal, error)
}

// ErrUnknownToken is what an Authenticator answers for a token it does not
// accept.
var ErrUnknownToken = errors.New("unknown bearer token")

// withFlatTokens returns the authenticators of a Config: its flat tokens
// first, then the others.
func withFlatTokens(tokens []string, others []Authenticator) []Authenticator {
	if len(tokens) == 0 {
		return others
	}
	return append([]Authenticator{OperatorTokens(tokens)}, others...)
}

// authenticate finds the principal of the request from its bearer token
// and returns the request carrying it. A request that already carries one
// comes from inside the process (Apply); the context of a request from
// outside holds none.
func (s *Server) authenticate(r *http.Request) (*http.Request, *apiError) {
	if _, ok := principalOf(r.Context()); ok {
		return r, nil
	}
	if len(s.cfg.Authenticators) == 0 {
		return r.WithContext(withPrincipal(r.Context(), anonymous)), nil
	}
	refused := newError(http.StatusUnauthorized, codeAuthFailed, "a valid bearer token is required in the Authorization header")
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return r, refused
	}
	p, err := s.principal(r.Context(), token)
	switch {
	case err == nil:
		return r.WithContext(withPrincipal(r.Context(), p)), nil
	case errors.Is(err, ErrTokenRefused):
		return r, refused
	default:
		s.cfg.Logger.Warn("a bearer token could not be checked", slog.String("error", err.Error()))
		return r, unavailable("the bearer token cannot be checked now: the identity provider does not answer; retry")
	}
}

// authorize checks that the request's principal holds the role its method
// needs over the resource its path names: reader for GET, writer for
// every other method. A listing needs the role over some part of what it
// lists, and shows only that part (see visibleCollections); the listing of
// every subscription is open to every principal, and shows it what it may
// read, if anything.
func (s *Server) authorize(r *http.Request, pattern string, seg []string) *apiError {
	p, _ := principalOf(r.Context())
	need := RoleWriter
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		need = RoleReader
	}
	scope := pathScope(pattern, seg)
	var allowed bool
	switch {
	case pattern == routeAllCollections:
		// Every principal may list; the listing shows only what it may
		// read, nothing for a principal that may read nothing.
		allowed = true
	case scope.Collection == "":
		allowed = p.reaches(need, scope.Subscription, scope.ResourceGroup)
	default:
		ref := contracts.CollectionRef{Subscription: scope.Subscription, ResourceGroup: scope.ResourceGroup, Collection: scope.Collection}
		allowed = p.roleAt(ref) >= need
	}
	if allowed {
		return nil
	}
	return newError(http.StatusForbidden, codeAuthorizationFailed, fmt.Sprintf(
		"the bearer token does not allow %s on %s: that needs the role %s (or above) there", r.Method, scope, need))
}

// pathScope returns the part of the resource tree the path of a route of
// pattern names (seg are its unescaped segments): everything for the
// listing of every collection, a subscription or a resource group for the
// listings at those levels, else the collection the path goes through.
func pathScope(pattern string, seg []string) Scope {
	switch pattern {
	case routeAllCollections:
		return Scope{}
	case routeSubscriptionCollections, routeSubscriptionUpcoming, routeSubscriptionExecutions:
		return Scope{Subscription: seg[1]}
	case routeCollections, routeUpcoming, routeExecutions:
		return Scope{Subscription: seg[1], ResourceGroup: seg[3]}
	}
	return Scope{Subscription: seg[1], ResourceGroup: seg[3], Collection: seg[7]}
}

// visibleCollections keeps the collections the request's principal may
// read.
func visibleCollections(ctx context.Context, cols []store.Collection) []store.Collection {
	p, _ := principalOf(ctx)
	return slices.DeleteFunc(cols, func(c store.Collection) bool { return p.roleAt(c.Ref) < RoleReader })
}

// audit logs a change a request made, with its principal (never its
// token) and request id.
func (s *Server) audit(ctx context.Context, event string, attrs ...any) {
	p, _ := principalOf(ctx)
	logger := s.cfg.Logger
	if w, ok := ctx.Value(retryWindowKey{}).(*retryWindow); ok {
		logger = w.logger
	}
	logger.Info(event, append([]any{slog.String("principal", p.Name)}, attrs...)...)
}
