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

// cookieName is the session cookie's name on r's connection.
func cookieName(r *http.Request) string {
	if r.TLS != nil {
		return secureSessionCookie
	}
	return sessionCookie
}

// read returns r's session; false when it has none, or one that does not
// open or has expired.
func (s *sessions) read(r *http.Request) (session, bool) {
	c, err := r.Cookie(cookieName(r))
	if err != nil {
		return session{}, false
	}
	raw, err := s.sealer.Open(seal.Prefix+c.Value, sessionAAD)
	if err != nil {
		return session{}, false
	}
	var sess session
	if json.Unmarshal(raw, &sess) != nil || sess.CSRF == "" || s.now().Unix() >= sess.Expires {
		return session{}, false
	}
	return sess, true
}

// write sets the cookie of sess: HttpOnly, SameSite=Strict, and Secure
// over TLS.
func (s *sessions) write(w http.ResponseWriter, r *http.Request, sess session) {
	raw, _ := json.Marshal(sess)
	sealed := s.sealer.Seal(raw, sessionAAD)
	http.SetCookie(w, &http.Cookie{
		Name: cookieName(r), Value: sealed[len(seal.Prefix):], Path: "/",
		Expires: time.Unix(sess.Expires, 0), HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode,
	})
}

// clear removes the session cookie.
func clearSession(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: cookieName(r), Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
}

// csrfMatches reports whether a form's value is the session's.
func csrfMatches(sess session, value string) bool {
	return value != "" && subtle.ConstantTimeCompare([]byte(sess.CSRF), []byte(value)) == 1
}
