package contracts

import (
	"net"
	"net/url"
	"strconv"
	"strings"
)

// DestinationPart is one thing that decides where a secret is sent: a field
// of the action, by its path within the action ("request.uri"), and its
// value in canonical form ("https://a.example:443").
type DestinationPart struct {
	Field string
	Value string
}

// Destination is where an action sends a secret, as the parts of the action
// that decide it. Two actions send a secret to the same place when their
// destinations are equal; the same secret may then be used by both.
type Destination []DestinationPart

// String returns d as one line, "field=value" for each part with the value
// quoted, which names d unambiguously: it is what sealed secrets are bound
// to (internal/seal).
func (d Destination) String() string {
	var b strings.Builder
	for i, p := range d {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(p.Field)
		b.WriteByte('=')
		b.WriteString(strconv.Quote(p.Value))
	}
	return b.String()
}

// Change returns the first part of to that d does not have with the same
// value, with d's value of that field ("" when d has none); ok is false
// when the two are equal.
func (d Destination) Change(to Destination) (from string, changed DestinationPart, ok bool) {
	for _, p := range to {
		old, found := d.value(p.Field)
		if !found || old != p.Value {
			return old, p, true
		}
	}
	for _, p := range d {
		if _, found := to.value(p.Field); !found {
			return p.Value, DestinationPart{Field: p.Field}, true
		}
	}
	return "", DestinationPart{}, false
}

func (d Destination) value(field string) (string, bool) {
	for _, p := range d {
		if p.Field == field {
			return p.Value, true
		}
	}
	return "", false
}

// Secret is one secret field of an action and where the action sends it.
type Secret struct {
	// Field is the secret's path within the action, such as
	// "request.authentication.password"; its last element is the name a
	// user knows it by.
	Field string
	// Value points at the secret in the action.
	Value *string
	// Destination is where the action sends the secret.
	Destination Destination
	// Unused marks a secret the action holds but does not send with its
	// authentication type: the pfx or OAuth secret of a Basic request, say.
	Unused bool
}

// Name returns the secret's name: the last element of its field.
func (s Secret) Name() string { return s.Field[strings.LastIndexByte(s.Field, '.')+1:] }

// Secrets returns the secret fields of a, without those of its error action,
// whether empty or not, each with its destination: the HTTP authentication
// password, pfx and OAuth secret, the storage queue SAS token and the
// Service Bus SAS keys. They are the fields Redacted empties. nil gives nil.
//
// A secret's destination is made of the fields that say where it is sent:
//   - HTTP authentication: the scheme, host (lower-cased) and port (the
//     default one made explicit) of request.uri, and the authentication
//     type; for ActiveDirectoryOAuth also the tenant, audience and client
//     id, which say whom the secret asks for a token and for what;
//   - storage queue: the storage account;
//   - Service Bus queue or topic: the namespace (lower-cased).
//
// The path and query of the URI, the queue, topic and message are not part
// of it: changing them does not send the secret elsewhere.
func (a *JobAction) Secrets() []Secret {
	if a == nil {
		return nil
	}
	var out []Secret
	if r := a.Request; r != nil && r.Authentication != nil {
		auth := r.Authentication
		dest := Destination{{"request.uri", URIOrigin(r.URI)}, {"request.authentication.type", string(auth.Type)}}
		if auth.Type == HTTPAuthActiveDirectoryOAuth {
			dest = append(dest,
				DestinationPart{"request.authentication.tenant", auth.Tenant},
				DestinationPart{"request.authentication.audience", auth.Audience},
				DestinationPart{"request.authentication.clientId", auth.ClientID})
		}
		out = append(out,
			Secret{"request.authentication.password", &auth.Password, dest,
				auth.Type != HTTPAuthBasic && auth.Type != HTTPAuthClientCertificate},
			Secret{"request.authentication.pfx", &auth.Pfx, dest, auth.Type != HTTPAuthClientCertificate},
			Secret{"request.authentication.secret", &auth.Secret, dest, auth.Type != HTTPAuthActiveDirectoryOAuth})
	}
	if q := a.QueueMessage; q != nil {
		out = append(out, Secret{Field: "queueMessage.sasToken", Value: &q.SASToken,
			Destination: Destination{{"queueMessage.storageAccount", strings.ToLower(q.StorageAccount)}}})
	}
	if m := a.ServiceBusQueueMessage; m != nil && m.Authentication != nil {
		out = append(out, Secret{Field: "serviceBusQueueMessage.authentication.sasKey", Value: &m.Authentication.SASKey,
			Destination: Destination{{"serviceBusQueueMessage.namespace", strings.ToLower(m.Namespace)}}})
	}
	if m := a.ServiceBusTopicMessage; m != nil && m.Authentication != nil {
		out = append(out, Secret{Field: "serviceBusTopicMessage.authentication.sasKey", Value: &m.Authentication.SASKey,
			Destination: Destination{{"serviceBusTopicMessage.namespace", strings.ToLower(m.Namespace)}}})
	}
	return out
}

// URIOrigin returns the scheme, host and port of an absolute URI as
// "scheme://host:port": scheme and host lower-cased, the port made explicit
// (80 for http, 443 for https). A URI without a host is returned as given,
// so that it still names only itself.
func URIOrigin(uri string) string {
	u, err := url.Parse(uri)
	if err != nil || u.Host == "" {
		return uri
	}
	scheme, port := strings.ToLower(u.Scheme), u.Port()
	if port == "" {
		switch scheme {
		case "http":
			port = "80"
		case "https":
			port = "443"
		}
	}
	host := strings.ToLower(u.Hostname())
	if port == "" {
		if strings.Contains(host, ":") {
			host = "[" + host + "]"
		}
		return scheme + "://" + host
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}
