package contracts

import (
	"fmt"
	"strings"
)

// Names appear in keys ("sub/rg/collection/job"), subjects and URLs, so
// they are limited to ASCII; none may contain a slash.

// ValidateName checks a job collection or job name: 1 to 64 letters, digits,
// hyphens and underscores, starting with a letter or digit. kind ("job",
// "collection") names what is checked in the error.
func ValidateName(kind, name string) error {
	if !validName(name, 64, "-_") || !isASCIIAlnum(name[0]) {
		return fmt.Errorf("%s name %q is not valid: use 1 to 64 letters, digits, hyphens and underscores, starting with a letter or digit", kind, name)
	}
	return nil
}

// ValidateResourceGroup checks a resource group name as ARM does: 1 to 90
// letters, digits, hyphens, underscores, periods and parentheses, not ending
// with a period.
func ValidateResourceGroup(name string) error {
	if !validName(name, 90, "-_.()") || strings.HasSuffix(name, ".") {
		return fmt.Errorf("resource group name %q is not valid: use 1 to 90 letters, digits, hyphens, underscores, periods and parentheses, not ending with a period", name)
	}
	return nil
}

// ValidateSubscription checks a subscription id: 1 to 64 letters, digits and
// hyphens, such as a GUID.
func ValidateSubscription(id string) error {
	if !validName(id, 64, "-") {
		return fmt.Errorf("subscription id %q is not valid: use 1 to 64 letters, digits and hyphens, such as a GUID", id)
	}
	return nil
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
