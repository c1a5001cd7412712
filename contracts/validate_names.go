package contracts

import "strings"

// Service Bus namespace name limits, Azure's rule for the name a namespace
// is created with.
const (
	MinServiceBusNamespaceLength = 6
	MaxServiceBusNamespaceLength = 50
)

// IsServiceBusNamespace reports whether s is a Service Bus namespace name:
// 6 to 50 letters, digits and hyphens, starting with a letter and not
// ending with a hyphen. A host name or a host:port is not one: where a
// namespace is reached is the worker's configuration, not the job's.
func IsServiceBusNamespace(s string) bool {
	if len(s) < MinServiceBusNamespaceLength || len(s) > MaxServiceBusNamespaceLength || !isLetter(s[0]) || s[len(s)-1] == '-' {
		return false
	}
	for _, c := range []byte(s) {
		if !isLetter(c) && !isDigit(c) && c != '-' {
			return false
		}
	}
	return true
}

// IsTenant reports whether s is an Azure AD tenant as an OAuth authority
// takes it in its token URL: a tenant id (a GUID such as
// 72f988bf-86f1-41af-91ab-2d7cd011db47) or a domain name (contoso.com,
// contoso.onmicrosoft.com, or a single label such as "common"). Nothing
// else can go into a URL path segment safely: no "..", slash or
// percent sign.
func IsTenant(s string) bool {
	return isGUID(s) || isDomainName(s)
}

// isGUID reports whether s is a GUID in its 8-4-4-4-12 hexadecimal form.
func isGUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range []byte(s) {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !isDigit(c) && !('a' <= c && c <= 'f') && !('A' <= c && c <= 'F') {
				return false
			}
		}
	}
	return true
}

// isDomainName reports whether s is a DNS host name: at most 253
// characters of dot-separated labels, each 1 to 63 letters, digits and
// hyphens that neither starts nor ends with a hyphen.
func isDomainName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for label := range strings.SplitSeq(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range []byte(label) {
			if !isLetter(c) && !isDigit(c) && c != '-' {
				return false
			}
		}
	}
	return true
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
