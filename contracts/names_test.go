package contracts

import (
	"strings"
	"testing"
)

func TestValidateNames(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name     string
		validate func(string) error
		in       string
		wantErr  string
	}{
		{"a job name of letters, digits, hyphens and underscores passes", func(s string) error { return ValidateName("job", s) }, "http_job-2", ""},
		{"a name of 64 characters passes", func(s string) error { return ValidateName("job", s) }, strings.Repeat("a", 64), ""},
		{"an empty name is rejected", func(s string) error { return ValidateName("job", s) }, "", `job name "" is not valid: use 1 to 64 letters, digits, hyphens and underscores, starting with a letter or digit`},
		{"a name of 65 characters is rejected", func(s string) error { return ValidateName("collection", s) }, strings.Repeat("a", 65), "collection name"},
		{"a name starting with a hyphen is rejected", func(s string) error { return ValidateName("job", s) }, "-job", "starting with a letter or digit"},
		{"a name with a slash is rejected", func(s string) error { return ValidateName("job", s) }, "a/b", "is not valid"},
		{"a name with a period is rejected", func(s string) error { return ValidateName("job", s) }, "a.b", "is not valid"},
		{"a name with a non-ASCII letter is rejected", func(s string) error { return ValidateName("job", s) }, "jöb", "is not valid"},
		{"a resource group with periods and parentheses passes", ValidateResourceGroup, "my.rg(prod)_1-a", ""},
		{"a resource group of 90 characters passes", ValidateResourceGroup, strings.Repeat("r", 90), ""},
		{"a resource group of 91 characters is rejected", ValidateResourceGroup, strings.Repeat("r", 91), "resource group name"},
		{"a resource group ending with a period is rejected", ValidateResourceGroup, "rg.", "not ending with a period"},
		{"an empty resource group is rejected", ValidateResourceGroup, "", "use 1 to 90"},
		{"a resource group with a slash is rejected", ValidateResourceGroup, "a/b", "is not valid"},
		{"a GUID subscription passes", ValidateSubscription, "8ff3a7a2-0c5d-4e2d-9f9e-1a2b3c4d5e6f", ""},
		{"a subscription with an underscore is rejected", ValidateSubscription, "sub_1", `subscription id "sub_1" is not valid`},
		{"an empty subscription is rejected", ValidateSubscription, "", "use 1 to 64 letters, digits and hyphens"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.validate(tt.in)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("unexpected error for %q: %v", tt.in, err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("error for %q = %v, want one containing %q", tt.in, err, tt.wantErr)
			}
		})
	}
}
