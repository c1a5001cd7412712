package api

import (
	"strings"

	"github.com/jobscheduler/scheduler/contracts"
)

// keptSecretsStayBound returns the violations of a PATCH that keeps a
// stored secret of a job while changing where it is sent: the scheme, host
// or port of the request's URI, its authentication type, the OAuth tenant,
// audience or client id, the storage account or the Service Bus namespace
// (contracts.JobAction.Secrets). A secret the patch gives again may go
// anywhere; one it keeps may only go where it went. old is the stored
// job's main action, updated the one to be stored, and patch the request's
// body, which says which secrets were given. Each violation names the
// field that moved the secret, from "action.", and never a secret's value.
func keptSecretsStayBound(old, updated *contracts.JobAction, patch []byte) contracts.FieldErrors {
	decoded, _ := contracts.DecodeJob(patch) // the merged job was read and validated: only its secrets matter here
	var errs contracts.FieldErrors
	given, path := decoded.Properties.Action, "action"
	for updated != nil {
		checkKeptSecrets(old, updated, given, path, &errs)
		old, updated, given, path = errorActionOf(old), updated.ErrorAction, errorActionOf(given), path+".errorAction"
	}
	return errs
}

func errorActionOf(a *contracts.JobAction) *contracts.JobAction {
	if a == nil {
		return nil
	}
	return a.ErrorAction
}

// movedSecrets are the kept secrets one field sends elsewhere.
type movedSecrets struct {
	names    []string
	from, to string
}

// checkKeptSecrets adds a violation for each field of updated that sends
// a secret of old that given does not hold elsewhere (one per field, naming
// every such secret).
func checkKeptSecrets(old, updated, given *contracts.JobAction, path string, errs *contracts.FieldErrors) {
	stored := map[string]contracts.Secret{}
	for _, s := range old.Secrets() {
		stored[s.Field] = s
	}
	givenAgain := map[string]bool{}
	for _, s := range given.Secrets() {
		givenAgain[s.Field] = *s.Value != ""
	}
	var (
		fields []string
		moved  = map[string]*movedSecrets{}
	)
	for _, s := range updated.Secrets() {
		before, kept := stored[s.Field]
		if *s.Value == "" || s.Unused || givenAgain[s.Field] || !kept || *before.Value != *s.Value {
			continue
		}
		from, to, changed := before.Destination.Change(s.Destination)
		if !changed {
			continue
		}
		m := moved[to.Field]
		if m == nil {
			m = &movedSecrets{from: from, to: to.Value}
			moved[to.Field] = m
			fields = append(fields, to.Field)
		}
		m.names = append(m.names, s.Name())
	}
	for _, field := range fields {
		m := moved[field]
		names, verb := strings.Join(m.names, " and "), "is"
		if len(m.names) > 1 {
			verb = "are"
		}
		errs.Add(path+"."+field, "changing where the stored %s %s sent (from %s to %s) requires the %s again",
			names, verb, orNone(m.from), orNone(m.to), names)
	}
}

func orNone(v string) string {
	if v == "" {
		return "none"
	}
	return v
}
