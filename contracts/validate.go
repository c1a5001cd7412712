package contracts

import (
	"encoding/base64"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Limits of an action, from the original service's documented limits.
const (
	// MaxURILength is the longest request URI, in characters.
	MaxURILength = 2048
	// MaxHeaders is the most request headers an HTTP action may set.
	MaxHeaders = 50
	// MaxHeadersSize is the longest total of header names and values, in bytes.
	MaxHeadersSize = 4096
	// MaxBodyLength is the longest request body, in characters.
	MaxBodyLength = 8192
)

// Retry limits and the default retry policy (the 2016 documentation: four
// retries 30 seconds apart, at most 20 retries, 15 seconds to 18 months apart).
const (
	// DefaultRetryCount is the number of retries when no policy, or a Fixed
	// policy without retryCount, is given.
	DefaultRetryCount = 4
	// DefaultRetryInterval is the time between retries when no policy, or a
	// Fixed policy without retryInterval, is given.
	DefaultRetryInterval = 30 * time.Second
	// MaxRetryCount is the largest retryCount.
	MaxRetryCount = 20
	// MinRetryInterval is the shortest retryInterval.
	MinRetryInterval = 15 * time.Second
	// MaxRetryInterval is the longest retryInterval: 18 months, as 548 days.
	MaxRetryInterval = 548 * 24 * time.Hour
)

// ValidateAction appends the violations of the action at path (e.g.
// "properties.action"). errorAction says whether it is an error action (which
// cannot have its own errorAction). A nil action is reported as required.
func ValidateAction(a *JobAction, path string, errorAction bool, errs *FieldErrors) {
	if a == nil {
		errs.Add(path, "required")
		return
	}
	validatePayload(a, path, errs)
	ValidateRetryPolicy(a.RetryPolicy, path+".retryPolicy", errs)
	switch {
	case a.ErrorAction == nil:
	case errorAction:
		errs.Add(path+".errorAction", "an error action cannot have an error action")
	default:
		ValidateAction(a.ErrorAction, path+".errorAction", true, errs)
	}
}

// payloadName returns the property that carries the payload of type t.
func payloadName(t ActionType) string {
	switch t {
	case ActionHTTP, ActionHTTPS:
		return "request"
	case ActionStorageQueue:
		return "queueMessage"
	case ActionServiceBusQueue:
		return "serviceBusQueueMessage"
	case ActionServiceBusTopic:
		return "serviceBusTopicMessage"
	}
	return ""
}

// validatePayload checks the type and that the action has the payload of its
// type, valid, and no other.
func validatePayload(a *JobAction, path string, errs *FieldErrors) {
	if !checkEnum(errs, path+".type", a.Type, ActionTypes, true) {
		return
	}
	want := payloadName(a.Type)
	given := []struct {
		name string
		set  bool
	}{
		{"request", a.Request != nil},
		{"queueMessage", a.QueueMessage != nil},
		{"serviceBusQueueMessage", a.ServiceBusQueueMessage != nil},
		{"serviceBusTopicMessage", a.ServiceBusTopicMessage != nil},
	}
	for _, g := range given {
		switch {
		case g.name == want && !g.set:
			errs.Add(path+"."+want, "required for type %s", a.Type)
		case g.name != want && g.set:
			errs.Add(path+"."+g.name, "not allowed with type %s; give %s", a.Type, want)
		}
	}
	payloadPath := path + "." + want
	switch {
	case a.Request != nil && want == "request":
		validateHTTPRequest(a.Request, a.Type, payloadPath, errs)
	case a.QueueMessage != nil && want == "queueMessage":
		validateQueueMessage(a.QueueMessage, payloadPath, errs)
	case a.ServiceBusQueueMessage != nil && want == "serviceBusQueueMessage":
		validateServiceBusMessage(a.ServiceBusQueueMessage.ServiceBusMessage, payloadPath, errs)
		requireField(errs, payloadPath+".queueName", a.ServiceBusQueueMessage.QueueName, "")
	case a.ServiceBusTopicMessage != nil && want == "serviceBusTopicMessage":
		validateServiceBusMessage(a.ServiceBusTopicMessage.ServiceBusMessage, payloadPath, errs)
		requireField(errs, payloadPath+".topicPath", a.ServiceBusTopicMessage.TopicPath, "")
	}
}

func validateHTTPRequest(r *HTTPRequest, t ActionType, path string, errs *FieldErrors) {
	validateURI(r.URI, t, path+".uri", errs)
	switch {
	case r.Method == "":
		errs.Add(path+".method", "required; use an HTTP method such as GET or POST")
	case !isToken(r.Method):
		errs.Add(path+".method", "%q is not an HTTP method; use one such as GET, POST, PUT, DELETE, PATCH, HEAD or OPTIONS", r.Method)
	}
	validateHeaders(r.Headers, path+".headers", errs)
	if n := utf8.RuneCountInString(r.Body); n > MaxBodyLength {
		errs.Add(path+".body", "is %d characters; the limit is %d", n, MaxBodyLength)
	}
	if r.Authentication != nil {
		validateHTTPAuthentication(r.Authentication, path+".authentication", errs)
	}
}

func validateURI(uri string, t ActionType, path string, errs *FieldErrors) {
	if uri == "" {
		errs.Add(path, "required; give an absolute http or https URI")
		return
	}
	if n := utf8.RuneCountInString(uri); n > MaxURILength {
		errs.Add(path, "is %d characters; the limit is %d", n, MaxURILength)
		return
	}
	u, err := url.Parse(uri)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		errs.Add(path, "must be an absolute http or https URI, such as https://example.com/path")
		return
	}
	if t == ActionHTTPS && u.Scheme != "https" {
		errs.Add(path, "must be an https URI for type Https; use type Http for http")
	}
}

func validateHeaders(headers map[string]string, path string, errs *FieldErrors) {
	if len(headers) > MaxHeaders {
		errs.Add(path, "has %d headers; the limit is %d", len(headers), MaxHeaders)
	}
	size := 0
	for _, name := range slices.Sorted(maps.Keys(headers)) {
		value := headers[name]
		size += len(name) + len(value)
		switch {
		case !isToken(name):
			errs.Add(path+"."+name, "is not a valid header name; use letters, digits and !#$%%&'*+-.^_`|~")
		case !isHeaderValue(value):
			errs.Add(path+"."+name, "the value must not contain line breaks or other control characters")
		}
	}
	if size > MaxHeadersSize {
		errs.Add(path, "the header names and values total %d bytes; the limit is %d", size, MaxHeadersSize)
	}
}

func validateHTTPAuthentication(a *HTTPAuthentication, path string, errs *FieldErrors) {
	if !checkEnum(errs, path+".type", a.Type, HTTPAuthTypes, true) {
		return
	}
	kind := string(a.Type)
	switch a.Type {
	case HTTPAuthBasic:
		requireField(errs, path+".username", a.Username, kind)
		requireField(errs, path+".password", a.Password, kind)
	case HTTPAuthClientCertificate:
		requireField(errs, path+".pfx", a.Pfx, kind)
		if a.Pfx != "" {
			if _, err := base64.StdEncoding.DecodeString(a.Pfx); err != nil {
				errs.Add(path+".pfx", "must be the PFX file in base64")
			}
		}
		requireField(errs, path+".password", a.Password, kind)
	case HTTPAuthActiveDirectoryOAuth:
		if requireField(errs, path+".tenant", a.Tenant, kind) && !IsTenant(a.Tenant) {
			errs.Add(path+".tenant", "%q must be a tenant id (a GUID such as 72f988bf-86f1-41af-91ab-2d7cd011db47) or a domain name such as contoso.onmicrosoft.com", a.Tenant)
		}
		requireField(errs, path+".audience", a.Audience, kind)
		requireField(errs, path+".clientId", a.ClientID, kind)
		requireField(errs, path+".secret", a.Secret, kind)
	}
}

func validateQueueMessage(m *StorageQueueMessage, path string, errs *FieldErrors) {
	if requireField(errs, path+".storageAccount", m.StorageAccount, "") && !isStorageAccountName(m.StorageAccount) {
		errs.Add(path+".storageAccount", "%q must be 3 to 24 lowercase letters and digits", m.StorageAccount)
	}
	if requireField(errs, path+".queueName", m.QueueName, "") && !isQueueName(m.QueueName) {
		errs.Add(path+".queueName", "%q must be 3 to 63 lowercase letters, digits and hyphens, start and end with a letter or digit, and have no two hyphens in a row", m.QueueName)
	}
	requireField(errs, path+".sasToken", m.SASToken, "")
	requireField(errs, path+".message", m.Message, "")
}

func validateServiceBusMessage(m ServiceBusMessage, path string, errs *FieldErrors) {
	if requireField(errs, path+".namespace", m.Namespace, "") && !IsServiceBusNamespace(m.Namespace) {
		errs.Add(path+".namespace", "%q must be a namespace name: %d to %d letters, digits and hyphens, starting with a letter and not ending with a hyphen; "+
			"a host name or port cannot be given here (the worker's --service-bus-endpoint says where namespaces are reached)",
			m.Namespace, MinServiceBusNamespaceLength, MaxServiceBusNamespaceLength)
	}
	checkEnum(errs, path+".transportType", m.TransportType, TransportTypes, false)
	if a := m.Authentication; a == nil {
		errs.Add(path+".authentication", "required; give sasKeyName and sasKey")
	} else {
		requireField(errs, path+".authentication.sasKeyName", a.SASKeyName, "")
		requireField(errs, path+".authentication.sasKey", a.SASKey, "")
		checkEnum(errs, path+".authentication.type", a.Type, ServiceBusAuthTypes, false)
	}
	if p := m.BrokeredMessageProperties; p != nil && p.TimeToLive != "" {
		if d, err := ParseDuration(p.TimeToLive); err != nil {
			errs.Add(path+".brokeredMessageProperties.timeToLive", "%v", err)
		} else if d <= 0 {
			errs.Add(path+".brokeredMessageProperties.timeToLive", "%q must be longer than zero", p.TimeToLive)
		}
	}
}

// ValidateRetryPolicy appends the violations of the retry policy at path (e.g.
// "properties.action.retryPolicy"). A nil policy is valid: the default
// applies. With retryType None, retryInterval and retryCount are ignored.
func ValidateRetryPolicy(p *RetryPolicy, path string, errs *FieldErrors) {
	if p == nil {
		return
	}
	switch p.RetryType {
	case RetryNone:
		return
	case RetryFixed:
	case "":
		// The interval and count are still checked: their problems are
		// worth knowing while the type is being added.
		checkEnum(errs, path+".retryType", p.RetryType, RetryTypes, true)
	default:
		checkEnum(errs, path+".retryType", p.RetryType, RetryTypes, true)
		return
	}
	if p.RetryInterval != "" {
		d, err := ParseDuration(p.RetryInterval)
		switch {
		case err != nil:
			errs.Add(path+".retryInterval", "%v", err)
		case d < MinRetryInterval:
			errs.Add(path+".retryInterval", "%q is shorter than the minimum of 15 seconds (PT15S)", p.RetryInterval)
		case d > MaxRetryInterval:
			errs.Add(path+".retryInterval", "%q is longer than the maximum of 18 months (P548D)", p.RetryInterval)
		}
	}
	if p.RetryCount != nil && (*p.RetryCount < 0 || *p.RetryCount > MaxRetryCount) {
		errs.Add(path+".retryCount", "must be between 0 and %d, not %d", MaxRetryCount, *p.RetryCount)
	}
}

// EffectiveRetry returns the retry count and interval that apply: no policy
// means the default 4 retries 30 s apart; None means 0; Fixed fills blanks
// with 4 and 30 s. Values out of the allowed ranges, which validation
// rejects, are clamped into them.
func EffectiveRetry(p *RetryPolicy) (count int, interval time.Duration) {
	switch {
	case p == nil:
		return DefaultRetryCount, DefaultRetryInterval
	case p.RetryType == RetryNone:
		return 0, 0
	}
	count, interval = DefaultRetryCount, DefaultRetryInterval
	if p.RetryCount != nil {
		count = min(max(*p.RetryCount, 0), MaxRetryCount)
	}
	if d, err := ParseDuration(p.RetryInterval); p.RetryInterval != "" && err == nil {
		interval = min(max(d, MinRetryInterval), MaxRetryInterval)
	}
	return count, interval
}

// checkEnum reports a value that is not one of the canonical values (or
// missing, when required) and says whether it is valid.
func checkEnum[T ~string](errs *FieldErrors, path string, v T, values []T, required bool) bool {
	switch {
	case v == "" && required:
		errs.Add(path, "required; use one of %s", EnumList(values))
		return false
	case v == "":
		return true
	case !slices.Contains(values, v):
		errs.Add(path, "%q is not one of %s", v, EnumList(values))
		return false
	}
	return true
}

// requireField reports an empty value as required (for a kind of
// authentication, when kind is set) and says whether it is present.
func requireField(errs *FieldErrors, path, value, kind string) bool {
	if value != "" {
		return true
	}
	if kind != "" {
		errs.Add(path, "required for %s authentication", kind)
	} else {
		errs.Add(path, "required")
	}
	return false
}

// isToken reports whether s is an RFC 7230 token, the syntax of HTTP methods
// and header names.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		isAlnum := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
		if !isAlnum && !strings.ContainsRune("!#$%&'*+-.^_`|~", rune(c)) {
			return false
		}
	}
	return true
}

// isHeaderValue reports whether s is an RFC 7230 field value: no control
// characters but horizontal tab, so no line breaks that could inject headers.
func isHeaderValue(s string) bool {
	for _, c := range []byte(s) {
		if c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// isStorageAccountName reports whether s is an Azure storage account name:
// 3 to 24 lowercase letters and digits.
func isStorageAccountName(s string) bool {
	if len(s) < 3 || len(s) > 24 {
		return false
	}
	for _, c := range []byte(s) {
		if !isLowerAlnum(c) {
			return false
		}
	}
	return true
}

// isQueueName reports whether s is an Azure storage queue name: 3 to 63
// lowercase letters, digits and hyphens, starting and ending with a letter
// or digit, with no two hyphens in a row.
func isQueueName(s string) bool {
	if len(s) < 3 || len(s) > 63 || !isLowerAlnum(s[0]) || !isLowerAlnum(s[len(s)-1]) || strings.Contains(s, "--") {
		return false
	}
	for _, c := range []byte(s) {
		if !isLowerAlnum(c) && c != '-' {
			return false
		}
	}
	return true
}

func isLowerAlnum(c byte) bool { return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' }
