package contracts

import "testing"

func TestToken(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"MyJobs":       "myjobs",
		"rg.with(dot)": "rg=2Ewith=28dot=29",
		"a_b-c9":       "a_b-c9",
		"x*y>z":        "x=2Ay=3Ez",
		"Été":          "=C3=A9t=C3=A9",
		"":             "",
	} {
		if got := Token(in); got != want {
			t.Errorf("Token(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestKeysAreCaseInsensitive(t *testing.T) {
	t.Parallel()
	a := JobRef{Subscription: "Sub", ResourceGroup: "RG", Collection: "Jobs", Job: "Nightly"}
	b := JobRef{Subscription: "sub", ResourceGroup: "rg", Collection: "JOBS", Job: "nightly"}
	if a.KVKey() != b.KVKey() {
		t.Fatalf("%q != %q", a.KVKey(), b.KVKey())
	}
	if got, want := a.KVKey(), "j.sub.rg.jobs.nightly"; got != want {
		t.Fatalf("KVKey = %q, want %q", got, want)
	}
	if got, want := a.CollectionRef().KVKey(), "c.sub.rg.jobs"; got != want {
		t.Fatalf("collection KVKey = %q, want %q", got, want)
	}
	if got, want := a.CollectionRef().CalendarKVKey("Feiertage"), "cal.sub.rg.jobs.feiertage"; got != want {
		t.Fatalf("CalendarKVKey = %q, want %q", got, want)
	}
	if _, ok := JobTokensOfKey(a.CollectionRef().CalendarKVKey("x")); ok {
		t.Fatal("a calendar key reads as a job's")
	}
}

func TestParseTokenReversesToken(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"myjobs", "rg.with(dot)", "a_b-c9", "x*y>z", "ünï"} {
		got, err := ParseToken(Token(name))
		if err != nil || got != name {
			t.Errorf("ParseToken(Token(%q)) = %q, %v", name, got, err)
		}
	}
	for _, bad := range []string{"a=4", "a=zz", "a.b", "A"} {
		if _, err := ParseToken(bad); err == nil {
			t.Errorf("ParseToken(%q) accepted", bad)
		}
	}
}

// A job's tokens and key are its collection's tokens and its own name's
// token, joined, whatever its names hold.
func TestAJobsTokensAndKeyJoinItsNamesTokens(t *testing.T) {
	t.Parallel()
	for _, r := range []JobRef{
		{Subscription: "sub", ResourceGroup: "rg", Collection: "jobs", Job: "nightly"},
		{Subscription: "Sub-1", ResourceGroup: "rg.with(dot)", Collection: "Été", Job: "x*y>z"},
	} {
		tokens := r.CollectionRef().Tokens() + "." + Token(r.Job)
		if got := r.Tokens(); got != tokens {
			t.Errorf("%+v: Tokens = %q, want %q", r, got, tokens)
		}
		if got, want := r.KVKey(), JobKeyOfTokens(tokens); got != want {
			t.Errorf("%+v: KVKey = %q, want %q", r, got, want)
		}
	}
}
