package api

import (
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// Codes of the refusals of requests a browser may have been made to send.
const (
	codeMisdirected     = "MisdirectedRequest"
	codeUnsupportedType = "UnsupportedMediaType"
	codeCrossOrigin     = "CrossOriginRequestRefused"
)

// browserGuard refuses the requests a web page can make a browser send to
// the API on the operator's machine, where the API may need no token:
//
//   - DNS rebinding: a request whose Host header names a host the API is
//     not served as (a name of the attacker's that resolves to loopback);
//   - cross-site request forgery: a state-changing request with a form
//     content type (the only ones a page can send without asking the API
//     first), or from a foreign origin (Sec-Fetch-Site, Origin).
type browserGuard struct {
	// hosts are the host names (lower case, without port) the API serves;
	// empty serves every Host.
	hosts map[string]bool
	cross *http.CrossOriginProtection
}

func newBrowserGuard(hosts []string, public *url.URL) *browserGuard {
	g := &browserGuard{cross: http.NewCrossOriginProtection()}
	if public != nil {
		hosts = append(hosts, public.Hostname())
		// The public URL's origin may call the API from a page: a
		// console served under it.
		_ = g.cross.AddTrustedOrigin(public.Scheme + "://" + public.Host)
	}
	if len(hosts) > 0 {
		g.hosts = map[string]bool{}
		for _, h := range hosts {
			g.hosts[normalHost(h)] = true
		}
	}
	// The refusal is answered by check, with an ARM body.
	g.cross.SetDenyHandler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	return g
}

// normalHost returns host without port or brackets, in lower case.
func normalHost(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return strings.ToLower(strings.Trim(host, "[]"))
}

// check returns the refusal of r, or nil.
func (g *browserGuard) check(r *http.Request) *apiError {
	if g.hosts != nil && !g.hosts[normalHost(r.Host)] {
		return newError(http.StatusMisdirectedRequest, codeMisdirected,
			"the Host header names "+strconv.Quote(r.Host)+", which this API is not served as; "+
				"the names it is served as are set with --api-hosts or --public-url")
	}
	if isSafeMethod(r.Method) {
		return nil
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || formTypes[mt] {
			return newError(http.StatusUnsupportedMediaType, codeUnsupportedType,
				"Content-Type "+strconv.Quote(ct)+" is not accepted for "+r.Method+"; send application/json")
		}
	}
	if err := g.cross.Check(r); err != nil {
		return newError(http.StatusForbidden, codeCrossOrigin,
			"a "+r.Method+" from another origin is refused (Origin "+strconv.Quote(r.Header.Get("Origin"))+
				", Sec-Fetch-Site "+strconv.Quote(r.Header.Get("Sec-Fetch-Site"))+")")
	}
	return nil
}

// formTypes are the content types a page may send across origins without
// a preflight request.
var formTypes = map[string]bool{
	"application/x-www-form-urlencoded": true,
	"multipart/form-data":               true,
	"text/plain":                        true,
}

func isSafeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// nextLink returns the absolute URL of the page after p, or nil. It starts
// with the configured public URL or the address the API listens on, never
// with the request's Host header, which a client chooses.
func (s *Server) nextLink(r *http.Request, p page, total int) *string {
	if !p.hasTop || p.skip+p.top >= total {
		return nil
	}
	u := *r.URL
	u.Scheme, u.Host = "http", "localhost"
	if base := s.base.Load(); base != nil {
		u.Scheme, u.Host = base.Scheme, base.Host
		u.Path = strings.TrimSuffix(base.Path, "/") + r.URL.Path
		u.RawPath = ""
	}
	q := u.Query()
	q.Set("$skip", strconv.Itoa(p.skip+p.top))
	u.RawQuery = q.Encode()
	link := u.String()
	return &link
}
