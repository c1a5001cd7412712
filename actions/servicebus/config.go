package servicebus

import (
	"cmp"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/jobscheduler/scheduler/actions/netpolicy"
)

// DefaultEndpointTemplate is the endpoint of a namespace in Azure's public
// cloud.
const DefaultEndpointTemplate = "sb://{namespace}.servicebus.windows.net/"

// namespacePlaceholder is what an endpoint template holds where the
// action's namespace goes.
const namespacePlaceholder = "{namespace}"

// Config configures a Sender.
type Config struct {
	// EndpointTemplate is the endpoint of an action's namespace, an sb://
	// URL in which {namespace} stands for the action's namespace. With the
	// default template, a namespace that contains a dot or a colon (which
	// no namespace name does) is taken as a host name with an optional
	// port, sb://<namespace>/ (the API accepts namespace names only, so
	// such a namespace comes from elsewhere, and its address is checked
	// by the address policy like any other). Defaults to
	// sb://{namespace}.servicebus.windows.net/.
	EndpointTemplate string
	// Emulator connects without TLS, in plain AMQP with SASL ANONYMOUS (it
	// adds UseDevelopmentEmulator=true to the connection string), for the
	// Service Bus emulator and local test peers. Defaults to false: TLS on
	// port 5671.
	Emulator bool
	// Timeout bounds one attempt (connecting, authenticating and sending)
	// when the caller's context has no earlier deadline. Defaults to 60 s.
	Timeout time.Duration
	// MaxSenders is how many entity senders (one per queue or topic of a
	// namespace and key) are kept open for reuse. Defaults to 256.
	MaxSenders int
	// WebSockets connects to namespaces over AMQP over WebSockets
	// (wss://<host>/$servicebus/websocket on port 443), for networks that
	// allow only HTTPS, rather than to their AMQP port. Defaults to false.
	WebSockets bool
	// AllowLoopback lets sends reach a namespace on a loopback address,
	// such as the Service Bus emulator on the worker's host. Defaults to
	// false: every connection goes through the address policy of package
	// netpolicy.
	AllowLoopback bool
	// AllowPrivate lets sends reach a namespace on a private address.
	// Defaults to false.
	AllowPrivate bool
	// Resolver looks up namespaces' host names. Defaults to
	// net.DefaultResolver.
	Resolver netpolicy.Resolver
	// Logger receives a line when a client or sender is closed after a
	// failure. Defaults to slog.Default().
	Logger *slog.Logger
}

// withDefaults returns c with its zero fields set to their defaults.
func (c Config) withDefaults() Config {
	c.EndpointTemplate = cmp.Or(c.EndpointTemplate, DefaultEndpointTemplate)
	c.Timeout = cmp.Or(c.Timeout, 60*time.Second)
	c.MaxSenders = cmp.Or(c.MaxSenders, 256)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// validate reports the first field of c (with defaults applied) that
// cannot work.
func (c Config) validate() error {
	if _, err := c.endpoint("namespace"); err != nil {
		return fmt.Errorf("servicebus: Config.EndpointTemplate %q must be an sb:// URL with a host, such as %s: %w",
			c.EndpointTemplate, DefaultEndpointTemplate, err)
	}
	if c.Timeout < 0 {
		return fmt.Errorf("servicebus: Config.Timeout (%s) must not be negative", c.Timeout)
	}
	if c.MaxSenders < 1 {
		return fmt.Errorf("servicebus: Config.MaxSenders (%d) must be at least 1", c.MaxSenders)
	}
	return nil
}

// endpoint returns the endpoint of namespace: the template with the
// namespace in place of {namespace}, or sb://<namespace>/ when the template
// is the default one and the namespace is a host name (or host:port).
func (c Config) endpoint(namespace string) (string, error) {
	if namespace == "" {
		return "", fmt.Errorf("the namespace is empty")
	}
	for _, r := range namespace {
		if !isNamespaceRune(r) {
			return "", fmt.Errorf("the namespace %q is neither a namespace name nor a host name", namespace)
		}
	}
	template := c.EndpointTemplate
	if template == DefaultEndpointTemplate && strings.ContainsAny(namespace, ".:") {
		template = "sb://" + namespacePlaceholder + "/"
	}
	endpoint := strings.ReplaceAll(template, namespacePlaceholder, namespace)
	u, err := url.Parse(endpoint)
	switch {
	case err != nil:
		return "", fmt.Errorf("the endpoint %q is not a URL", endpoint)
	case u.Scheme != "sb":
		return "", fmt.Errorf("the endpoint %q is not an sb:// URL", endpoint)
	case u.Host == "" || u.User != nil:
		return "", fmt.Errorf("the endpoint %q has no host", endpoint)
	case strings.Trim(u.Path, "/") != "" || u.RawQuery != "" || u.Fragment != "" || strings.ContainsAny(endpoint, "; "):
		// A path would be ignored and a ';' would end the connection
		// string's Endpoint early.
		return "", fmt.Errorf("the endpoint %q must be sb://<host>[:<port>]/ alone", endpoint)
	}
	return endpoint, nil
}

// isNamespaceRune reports whether r may appear in a namespace name or a
// host name with an optional port (an IPv6 address in brackets included).
func isNamespaceRune(r rune) bool {
	return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune("-.:[]", r)
}
