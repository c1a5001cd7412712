package seal

import (
	"fmt"

	"github.com/jobscheduler/scheduler/contracts"
)

// Each secret is sealed for aad plus the name of its field, so a sealed
// SAS token cannot be moved into a password field of the same job. The name
// is the field's, not its path: an error action's secrets open the same way
// when the error action is sent as an action of its own.
const (
	fieldSASToken = "queueMessage.sasToken"
	fieldSASKey   = "serviceBus.authentication.sasKey"
	fieldPassword = "request.authentication.password"
	fieldPfx      = "request.authentication.pfx"
	fieldSecret   = "request.authentication.secret"
)

// FieldAAD is the additional data SealAction binds the secret in field to:
// aad, a zero byte, and the field's name. It is exported for code that opens
// one field with Open.
func FieldAAD(aad, field string) string { return aad + "\x00" + field }

// SealAction returns a deep copy of a with every non-empty secret sealed,
// in the action and in its error action: the storage queue SAS token, the
// Service Bus SAS key, and the HTTP authentication password, PFX and OAuth
// secret. Each is bound to aad (the job's KV key) and to its field (see
// FieldAAD). Empty secrets stay empty. a is not changed; nil gives nil.
func (s *Sealer) SealAction(a *contracts.JobAction, aad string) *contracts.JobAction {
	c := cloneAction(a)
	for act := c; act != nil; act = act.ErrorAction {
		for _, f := range secretFields(act) {
			if *f.value != "" {
				*f.value = s.Seal([]byte(*f.value), FieldAAD(aad, f.name))
			}
		}
	}
	return c
}

// OpenAction returns a deep copy of a with every secret that SealAction
// sealed opened again. A non-empty secret that is not sealed, or that does
// not open (other key, other aad, tampering), is an error naming the field,
// never its value. a is not changed; nil gives nil.
func (s *Sealer) OpenAction(a *contracts.JobAction, aad string) (*contracts.JobAction, error) {
	c := cloneAction(a)
	for act, path := c, "action"; act != nil; act, path = act.ErrorAction, path+".errorAction" {
		for _, f := range secretFields(act) {
			if *f.value == "" {
				continue
			}
			plain, err := s.Open(*f.value, FieldAAD(aad, f.name))
			if err != nil {
				return nil, fmt.Errorf("opening %s.%s: %w", path, f.name, err)
			}
			*f.value = string(plain)
		}
	}
	return c, nil
}

type secretField struct {
	name  string
	value *string
}

// secretFields lists the secret fields of one action, without its error
// action. Redacted in contracts empties the same fields.
func secretFields(a *contracts.JobAction) []secretField {
	var fs []secretField
	if r := a.Request; r != nil && r.Authentication != nil {
		fs = append(fs,
			secretField{fieldPassword, &r.Authentication.Password},
			secretField{fieldPfx, &r.Authentication.Pfx},
			secretField{fieldSecret, &r.Authentication.Secret})
	}
	if q := a.QueueMessage; q != nil {
		fs = append(fs, secretField{fieldSASToken, &q.SASToken})
	}
	if m := a.ServiceBusQueueMessage; m != nil && m.Authentication != nil {
		fs = append(fs, secretField{fieldSASKey, &m.Authentication.SASKey})
	}
	if m := a.ServiceBusTopicMessage; m != nil && m.Authentication != nil {
		fs = append(fs, secretField{fieldSASKey, &m.Authentication.SASKey})
	}
	return fs
}

// cloneAction deep-copies a through contracts' Clone, the one place that
// knows every pointer in a job.
func cloneAction(a *contracts.JobAction) *contracts.JobAction {
	return contracts.JobProperties{Action: a}.Clone().Action
}
