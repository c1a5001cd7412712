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

func TestQuoteNameCutsLongNames(t *testing.T) {
	t.Parallel()
	if got := QuoteName("job-1"); got != `"job-1"` {
		t.Errorf("QuoteName(job-1) = %s", got)
	}
	long := strings.Repeat("a", 4050)
	got := QuoteName(long)
	if want := `"` + strings.Repeat("a", 80) + `…" (4050 bytes)`; got != want {
		t.Errorf("QuoteName of 4,050 bytes = %s, want %s", got, want)
	}
	if got := Abbreviate(long); got != strings.Repeat("a", 80)+"… (4050 bytes)" {
		t.Errorf("Abbreviate of 4,050 bytes = %s", got)
	}
	// A cut never splits a character.
	if got := QuoteName(strings.Repeat("é", 100)); !strings.HasPrefix(got, `"`+strings.Repeat("é", 40)+`…"`) {
		t.Errorf("QuoteName of 100 é = %s", got)
	}
	err := ValidateName("job", long)
	if err == nil || len(err.Error()) > 300 || !strings.Contains(err.Error(), "(4050 bytes)") {
		t.Errorf("the error for a 4,050-byte name is %d bytes: %v", len(err.Error()), err)
	}
}

func TestCollectionRefValidateNamesEachBadPart(t *testing.T) {
	t.Parallel()
	if err := (CollectionRef{Subscription: "sub-1", ResourceGroup: "rg.(1)", Collection: "jc_1"}).Validate(); err != nil {
		t.Fatalf("a valid reference: %v", err)
	}
	err := CollectionRef{Subscription: "sub_1", ResourceGroup: "rg", Collection: strings.Repeat("c", 65)}.Validate()
	if err == nil || !strings.Contains(err.Error(), "subscription id") || !strings.Contains(err.Error(), "collection name") ||
		strings.Contains(err.Error(), "resource group") {
		t.Fatalf("error: %v", err)
	}
}

// The longest valid names make subjects and keys far below the 4,096 bytes
// of a NATS protocol line, whatever prefix, reply subject and size follow.
func TestTheLongestValidNamesStayWithinNATSLimits(t *testing.T) {
	t.Parallel()
	ref := JobRef{
		Subscription:  strings.Repeat("s", MaxSubscriptionLength),
		ResourceGroup: strings.Repeat(".", MaxResourceGroupLength-1) + "r", // every period escaped
		Collection:    strings.Repeat("c", MaxNameLength),
		Job:           strings.Repeat("j", MaxNameLength),
	}
	if err := ref.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := len(ref.Tokens()); got > MaxJobTokensLength || got < MaxJobTokensLength-2 {
		t.Fatalf("the longest tokens are %d bytes, MaxJobTokensLength is %d", got, MaxJobTokensLength)
	}
	// The longest subject built from a job: a direct get of its KV key, as
	// nats.go sends it, with a reply inbox and a payload size.
	longest := "PUB $JS.API.DIRECT.GET.KV_" + JobsBucket + ".$KV." + JobsBucket + "." + ref.KVKey() +
		" _INBOX.abcdefghijklmnopqrstuv.abcdefghijklmnopqrstuv 1048576\r\n"
	for _, prefix := range []string{ExecSubjectPrefix, ResultSubjectPrefix, HistorySubjectPrefix, IntakeSubjectPrefix, RequestSubjectPrefix, RejectedSubjectPrefix} {
		if len(prefix) > 40 {
			t.Errorf("subject prefix %q is longer than the test allows for", prefix)
		}
	}
	if len(longest) > 1024 {
		t.Fatalf("the longest protocol line is %d bytes, over a quarter of NATS's 4,096", len(longest))
	}
}
