package seal_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/seal"
	"github.com/jobscheduler/scheduler/internal/seal/sealtest"
)

// everySecret has one secret of each kind, in the action and its error
// action.
func everySecret() *contracts.JobAction {
	sb := contracts.ServiceBusMessage{Namespace: "ns", Authentication: &contracts.ServiceBusAuthentication{SASKey: "SB-KEY", SASKeyName: "Root"}}
	return &contracts.JobAction{
		Type:         contracts.ActionStorageQueue,
		QueueMessage: &contracts.StorageQueueMessage{StorageAccount: "acct", QueueName: "q", SASToken: "SAS-TOKEN", Message: "m"},
		ErrorAction: &contracts.JobAction{
			Type: contracts.ActionHTTPS,
			Request: &contracts.HTTPRequest{URI: "https://a.example/x", Method: "POST", Authentication: &contracts.HTTPAuthentication{
				Type: contracts.HTTPAuthClientCertificate, Password: "PFX-PASSWORD", Pfx: "PFX", Secret: "OAUTH-SECRET"}},
			ServiceBusQueueMessage: &contracts.ServiceBusQueueMessage{ServiceBusMessage: sb, QueueName: "q"},
			ServiceBusTopicMessage: &contracts.ServiceBusTopicMessage{ServiceBusMessage: sb, TopicPath: "t"},
		},
	}
}

func TestFormatV1(t *testing.T) {
	t.Parallel()
	const aad = "j.sub.rg.coll.job"

	t.Run("stored actions of format v1 open, counted, and seal again as v2", func(t *testing.T) {
		t.Parallel()
		s := seal.NewTestSealer(t)
		opened, v1, err := s.OpenStoredAction(sealtest.SealActionV1(s, everySecret(), aad), aad)
		if err != nil || v1 != 6 || !reflect.DeepEqual(opened, everySecret()) {
			t.Fatalf("opened %+v, %d v1 values, %v", opened, v1, err)
		}
		again, v1, err := s.OpenStoredAction(s.SealAction(opened, aad), aad)
		if err != nil || v1 != 0 || !reflect.DeepEqual(again, everySecret()) {
			t.Fatalf("sealed again: %d v1 values, %v", v1, err)
		}
	})
	t.Run("OpenAction refuses format v1, as a worker must", func(t *testing.T) {
		t.Parallel()
		s := seal.NewTestSealer(t)
		_, err := s.OpenAction(sealtest.SealActionV1(s, everySecret(), aad), aad)
		if !errors.Is(err, seal.ErrFormatV1) || !strings.Contains(err.Error(), "action.queueMessage.sasToken") {
			t.Fatalf("err = %v, want ErrFormatV1 naming the field", err)
		}
		if _, err := s.Open(seal.PrefixV1+"AAAA", aad); !errors.Is(err, seal.ErrFormatV1) {
			t.Fatalf("Open: err = %v, want ErrFormatV1", err)
		}
	})
	t.Run("a value relabelled from one format to the other does not open", func(t *testing.T) {
		t.Parallel()
		s := seal.NewTestSealer(t)
		v2 := s.SealAction(everySecret(), aad)
		v2.QueueMessage.SASToken = seal.PrefixV1 + strings.TrimPrefix(v2.QueueMessage.SASToken, seal.Prefix)
		if _, _, err := s.OpenStoredAction(v2, aad); !errors.Is(err, seal.ErrCannotOpen) {
			t.Fatalf("v2 as v1: err = %v", err)
		}
		v1 := sealtest.SealActionV1(s, everySecret(), aad)
		v1.QueueMessage.SASToken = seal.Prefix + strings.TrimPrefix(v1.QueueMessage.SASToken, seal.PrefixV1)
		if _, _, err := s.OpenStoredAction(v1, aad); !errors.Is(err, seal.ErrCannotOpen) {
			t.Fatalf("v1 as v2: err = %v", err)
		}
	})
	t.Run("a v1 value opens only for its own job", func(t *testing.T) {
		t.Parallel()
		s := seal.NewTestSealer(t)
		if _, _, err := s.OpenStoredAction(sealtest.SealActionV1(s, everySecret(), aad), "j.sub.rg.coll.other"); !errors.Is(err, seal.ErrCannotOpen) {
			t.Fatalf("err = %v", err)
		}
	})
}
