package seal

import (
	"errors"
	"fmt"
	"strings"

	"github.com/jobscheduler/scheduler/contracts"
)

// Each secret of an action is sealed for aad (the job's KV key, or the
// occurrence id of an execution), the secret's field and where the action
// sends it (contracts.JobAction.Secrets): a sealed SAS token cannot be moved
// into a password field, and a sealed password does not open once the
// request's host, port or scheme is changed, nor an OAuth secret once its
// tenant or audience is. The field is the secret's path within its action,
// not within the job: an error action's secrets open the same way when the
// error action is sent as an action of its own.

// secretAAD is the additional data of a secret sealed in format v2: the
// format, aad, the field and the destination, separated by zero bytes
// (Destination.String quotes its values, so none holds one).
func secretAAD(aad string, s contracts.Secret) string {
	return "v2\x00" + aad + "\x00" + s.Field + "\x00" + s.Destination.String()
}

// v1AAD is the additional data of a secret sealed in format v1: aad and the
// field's name, which for the Service Bus SAS keys of queues and topics was
// one.
func v1AAD(aad string, s contracts.Secret) string {
	name := s.Field
	if strings.HasSuffix(name, ".authentication.sasKey") {
		name = "serviceBus.authentication.sasKey"
	}
	return aad + "\x00" + name
}

// DestinationError is the failure to open a sealed secret for the
// destination of the action it came with: the action was changed after it
// was sealed (its URI, storage account, namespace, OAuth tenant or
// audience), the secret was, or it was sealed with another key. It names
// the secret and the destination, never a secret. It wraps ErrCannotOpen.
type DestinationError struct {
	// Path is the secret's path from the action: "action.request.
	// authentication.password", or "action.errorAction.…".
	Path string
	// Secret is the secret's name: "password", "sasToken", ….
	Secret string
	// Destination is where the action would have sent the secret.
	Destination contracts.Destination
}

func (e *DestinationError) Error() string {
	return fmt.Sprintf("opening %s: the sealed %s does not open for this destination (%s): the action was changed after it was sealed, or it was sealed with another key",
		e.Path, e.Secret, e.Destination)
}

// Unwrap returns ErrCannotOpen.
func (e *DestinationError) Unwrap() error { return ErrCannotOpen }

// SealAction returns a deep copy of a with every non-empty secret sealed in
// format v2, in the action and in its error action: the storage queue SAS
// token, the Service Bus SAS key, and the HTTP authentication password, PFX
// and OAuth secret. Each is bound to aad (the job's KV key, or an
// execution's occurrence id), to its field and to its destination (see
// contracts.JobAction.Secrets). Empty secrets stay empty. a is not changed;
// nil gives nil.
func (s *Sealer) SealAction(a *contracts.JobAction, aad string) *contracts.JobAction {
	c := cloneAction(a)
	for act := c; act != nil; act = act.ErrorAction {
		for _, f := range act.Secrets() {
			if *f.Value != "" {
				*f.Value = s.Seal([]byte(*f.Value), secretAAD(aad, f))
			}
		}
	}
	return c
}

// OpenAction returns a deep copy of a with every secret that SealAction
// sealed for aad opened again, each for the destination a has now. A
// secret that does not open there is a *DestinationError; one sealed in
// format v1 is ErrFormatV1, and one not sealed ErrNotSealed, each wrapped
// in an error naming the field, never its value. a is not changed; nil
// gives nil.
func (s *Sealer) OpenAction(a *contracts.JobAction, aad string) (*contracts.JobAction, error) {
	c, _, err := s.openAction(a, aad, false)
	return c, err
}

// OpenStoredAction is OpenAction for the actions of stored jobs, which
// planners before format v2 sealed in format v1: it opens those too, for
// aad and the field alone, and returns how many it opened so, for the
// caller to seal them again with SealAction. Execution messages are never
// opened this way: a v1 value is not bound to where it is sent.
func (s *Sealer) OpenStoredAction(a *contracts.JobAction, aad string) (opened *contracts.JobAction, v1 int, err error) {
	return s.openAction(a, aad, true)
}

func (s *Sealer) openAction(a *contracts.JobAction, aad string, allowV1 bool) (*contracts.JobAction, int, error) {
	c := cloneAction(a)
	v1 := 0
	for act, path := c, "action"; act != nil; act, path = act.ErrorAction, path+".errorAction" {
		for _, f := range act.Secrets() {
			if *f.Value == "" {
				continue
			}
			var (
				plain []byte
				err   error
			)
			if allowV1 && strings.HasPrefix(*f.Value, PrefixV1) {
				plain, err = s.open(*f.Value, PrefixV1, v1AAD(aad, f))
				v1++
			} else {
				plain, err = s.Open(*f.Value, secretAAD(aad, f))
				if errors.Is(err, ErrCannotOpen) {
					return nil, 0, &DestinationError{Path: path + "." + f.Field, Secret: f.Name(), Destination: f.Destination}
				}
			}
			if err != nil {
				return nil, 0, fmt.Errorf("opening %s.%s: %w", path, f.Field, err)
			}
			*f.Value = string(plain)
		}
	}
	return c, v1, nil
}

// cloneAction deep-copies a through contracts' Clone, the one place that
// knows every pointer in a job.
func cloneAction(a *contracts.JobAction) *contracts.JobAction {
	return contracts.JobProperties{Action: a}.Clone().Action
}
