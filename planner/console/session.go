package console

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"time"

	"github.com/jobscheduler/scheduler/internal/seal"
)

// The console keeps no state on the server: a viewer's session is a
// cookie sealed (AES-GCM) with a key derived from the planner's encryption
// key, so that every planner behind a load balancer opens it, and nobody
// without the key can read the token in it or forge one.

const (
	// sessionCookie names the cookie; the __Host- prefix (over TLS) pins
	// it to this host and path "/".
	sessionCookie       = "scheduler_session"
	secureSessionCookie = "__Host-scheduler_session"
	// sessionAAD binds sealed sessions to their use.
	sessionAAD = "console-session"
	// SessionLifetime is how long a sign-in lasts.
	SessionLifetime = 12 * time.Hour
)

// session is what the cookie holds.
type session struct {
	// Token is the bearer token the viewer signed in with; empty when the
	// API asks for none, or before signing in.
	Token string `json:"t,omitempty"`
	// CSRF is the value every form of the session carries.
	CSRF string `json:"c"`
	// Expires ends the session.
	Expires int64 `json:"e"`
}

// sessions seals and opens session cookies.
type sessions struct {
	sealer *seal.Sealer
	now    func() time.Time
}

func newSessions(key []byte, now func() time.Time) (*sessions, error) {
	derived := sha256.Sum256(append([]byte("scheduler console session key\x00"), key...))
	s, err := seal.New(derived[:])
	if err != nil {
		return nil, err
	}
	return &sessions{sealer: s, now: now}, nil
}

// fresh returns a new session for token.
func (s *sessions) fresh(token string) session {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return session{Token: token, CSRF: base64.RawURLEncoding.EncodeToString(b), Expires: s.now().Add(SessionLifetime).Unix()}
}

// sealedCookie is a cookie holding a JSON value sealed with the console's
// key: the session, a sign-in under way at the provider.
type sealedCookie struct {
	// plain and secure name it over HTTP and over TLS (where the __Host-
	// prefix pins it to this host and path "/").
	plain, secure string
	// aad binds its sealed values to their use.
	aad      string
	sameSite http.SameSite
}

var sessionCookieSpec = sealedCookie{plain: sessionCookie, secure: secureSessionCookie, aad: sessionAAD, sameSite: http.SameSiteStrictMode}

// name is the cookie's name on r's connection.
func (k sealedCookie) name(r *http.Request) string {
	if r.TLS != nil {
		return k.secure
	}
	return k.plain
}

// open reads r's cookie into v; false when it has none, or one that does
// not open or decode.
func (k sealedCookie) open(r *http.Request, s *seal.Sealer, v any) bool {
	c, err := r.Cookie(k.name(r))
	if err != nil {
		return false
	}
	raw, err := s.Open(seal.Prefix+c.Value, k.aad)
	return err == nil && json.Unmarshal(raw, v) == nil
}

// set writes v sealed into the cookie, HttpOnly, Secure over TLS; lifetime
// sets its Expires or MaxAge.
func (k sealedCookie) set(w http.ResponseWriter, r *http.Request, s *seal.Sealer, v any, lifetime http.Cookie) {
	raw, _ := json.Marshal(v)
	sealed := s.Seal(raw, k.aad)
	http.SetCookie(w, &http.Cookie{
		Name: k.name(r), Value: sealed[len(seal.Prefix):], Path: "/", Expires: lifetime.Expires, MaxAge: lifetime.MaxAge,
		HttpOnly: true, Secure: r.TLS != nil, SameSite: k.sameSite,
	})
}

// clear removes the cookie.
func (k sealedCookie) clear(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: k.name(r), Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: r.TLS != nil, SameSite: k.sameSite})
}

// read returns r's session; false when it has none, or one that does not
// open or has expired.
func (s *sessions) read(r *http.Request) (session, bool) {
	var sess session
	if !sessionCookieSpec.open(r, s.sealer, &sess) || sess.CSRF == "" || s.now().Unix() >= sess.Expires {
		return session{}, false
	}
	return sess, true
}

// write sets the cookie of sess: HttpOnly, SameSite=Strict, and Secure
// over TLS.
func (s *sessions) write(w http.ResponseWriter, r *http.Request, sess session) {
	sessionCookieSpec.set(w, r, s.sealer, sess, http.Cookie{Expires: time.Unix(sess.Expires, 0)})
}

// clearSession removes the session cookie.
func clearSession(w http.ResponseWriter, r *http.Request) { sessionCookieSpec.clear(w, r) }

// csrfMatches reports whether a form's value is the session's.
func csrfMatches(sess session, value string) bool {
	return value != "" && subtle.ConstantTimeCompare([]byte(sess.CSRF), []byte(value)) == 1
}
