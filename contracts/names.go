package contracts

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Names appear in keys ("sub/rg/collection/job"), subjects and URLs, so
// they are limited to ASCII; none may contain a slash.

// The longest names, in bytes. They bound every KV key, subject and header
// built from a name: NATS refuses a protocol line longer than 4,096 bytes
// (max_control_line) and closes the connection that sent it, so no name
// may reach NATS unchecked.
const (
	// MaxSubscriptionLength is the longest subscription id.
	MaxSubscriptionLength = 64
	// MaxResourceGroupLength is the longest resource group name, as in ARM.
	MaxResourceGroupLength = 90
	// MaxNameLength is the longest job collection or job name.
	MaxNameLength = 64
	// MaxJobTokensLength is the longest "<sub>.<rg>.<collection>.<job>"
	// (JobRef.Tokens) of a valid reference: Token escapes only a resource
	// group's periods and parentheses, in three bytes each. Every subject
	// and KV key of a job is a short prefix and these tokens.
	MaxJobTokensLength = MaxSubscriptionLength + 1 + 3*MaxResourceGroupLength + 1 + MaxNameLength + 1 + MaxNameLength
)

// ValidateName checks a job collection or job name: 1 to 64 letters, digits,
// hyphens and underscores, starting with a letter or digit. kind ("job",
// "collection") names what is checked in the error.
func ValidateName(kind, name string) error {
	if !validName(name, MaxNameLength, "-_") || !isASCIIAlnum(name[0]) {
		return fmt.Errorf("%s name %s is not valid: use 1 to %d letters, digits, hyphens and underscores, starting with a letter or digit",
			kind, QuoteName(name), MaxNameLength)
	}
	return nil
}

// ValidateResourceGroup checks a resource group name as ARM does: 1 to 90
// letters, digits, hyphens, underscores, periods and parentheses, not ending
// with a period.
func ValidateResourceGroup(name string) error {
	if !validName(name, MaxResourceGroupLength, "-_.()") || strings.HasSuffix(name, ".") {
		return fmt.Errorf("resource group name %s is not valid: use 1 to %d letters, digits, hyphens, underscores, periods and parentheses, not ending with a period",
			QuoteName(name), MaxResourceGroupLength)
	}
	return nil
}

// ValidateSubscription checks a subscription id: 1 to 64 letters, digits and
// hyphens, such as a GUID.
func ValidateSubscription(id string) error {
	if !validName(id, MaxSubscriptionLength, "-") {
		return fmt.Errorf("subscription id %s is not valid: use 1 to %d letters, digits and hyphens, such as a GUID",
			QuoteName(id), MaxSubscriptionLength)
	}
	return nil
}

// Validate checks each part of the reference with the naming rules.
func (c CollectionRef) Validate() error {
	return errors.Join(
		ValidateSubscription(c.Subscription),
		ValidateResourceGroup(c.ResourceGroup),
		ValidateName("collection", c.Collection),
	)
}

// quotedNameLength is how much of a name an error message quotes.
const quotedNameLength = 80

// QuoteName quotes a name for an error message. A name too long to be
// valid is cut, and its length given, so that a message never echoes a
// request's whole input: `"aaaa…" (4050 bytes)`.
func QuoteName(name string) string {
	head, cut := cutName(name)
	if !cut {
		return fmt.Sprintf("%q", name)
	}
	return fmt.Sprintf("%q (%d bytes)", head, len(name))
}

// Abbreviate is QuoteName without the quotes, for a log line: `aaaa…
// (4050 bytes)`.
func Abbreviate(name string) string {
	head, cut := cutName(name)
	if !cut {
		return name
	}
	return fmt.Sprintf("%s (%d bytes)", head, len(name))
}

// cutName returns the start of a name too long to show whole, ending in
// "…", and whether it was cut.
func cutName(name string) (string, bool) {
	if len(name) <= quotedNameLength {
		return name, false
	}
	cut := quotedNameLength
	for cut > 0 && !utf8.RuneStart(name[cut]) {
		cut--
	}
	return name[:cut] + "…", true
}

// validName reports whether s has 1 to maxLen bytes, each an ASCII letter or
// digit or one of extra.
func validName(s string, maxLen int, extra string) bool {
	if len(s) == 0 || len(s) > maxLen {
		return false
	}
	for _, c := range []byte(s) {
		if !isASCIIAlnum(c) && strings.IndexByte(extra, c) < 0 {
			return false
		}
	}
	return true
}

func isASCIIAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}
