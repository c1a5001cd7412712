package builtin_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/jobscheduler/scheduler/actions"
	"github.com/jobscheduler/scheduler/actions/builtin"
	"github.com/jobscheduler/scheduler/actions/netpolicy/netpolicytest"
	"github.com/jobscheduler/scheduler/contracts"
)

var names = netpolicytest.Names{
	"0177.0.0.1":    "127.0.0.1",
	"127.1":         "127.0.0.1",
	"2130706433":    "127.0.0.1",
	"0x7f.1":        "127.0.0.1",
	"loopback.test": "127.0.0.1",
	"mapped.test":   "::ffff:127.0.0.1",
	"nat64.test":    "64:ff9b::7f00:1",
}

// sender is how an action type reaches the host:port under test: through
// the job's action, or through the operator's endpoint configuration.
type sender struct {
	name string
	// configure points the configuration at hostport.
	configure func(cfg *builtin.Config, hostport string)
	// action is the job's action, sent to hostport.
	action func(hostport string) *contracts.JobAction
	// says is what the message says before the refusal.
	says string
}

var senders = []sender{
	{
		name:      "Http",
		configure: func(*builtin.Config, string) {},
		action: func(hostport string) *contracts.JobAction {
			return &contracts.JobAction{Type: contracts.ActionHTTP, Request: &contracts.HTTPRequest{URI: "http://" + hostport + "/run", Method: "POST"}}
		},
		says: "Http Action - Request to host ",
	},
	{
		name:      "Http with an OAuth token endpoint",
		configure: func(cfg *builtin.Config, hostport string) { cfg.HTTP.OAuthAuthority = "http://" + hostport },
		action: func(string) *contracts.JobAction {
			return &contracts.JobAction{Type: contracts.ActionHTTPS, Request: &contracts.HTTPRequest{URI: "https://target.invalid/run", Method: "POST",
				Authentication: &contracts.HTTPAuthentication{Type: contracts.HTTPAuthActiveDirectoryOAuth, Tenant: "contoso.com",
					Audience: "https://management.core.windows.net/", ClientID: "client", Secret: "client-secret-1234"}}}
		},
		says: "the token request to ",
	},
	{
		name: "StorageQueue",
		configure: func(cfg *builtin.Config, hostport string) {
			cfg.StorageQueue.EndpointTemplate = "http://" + hostport + "/{account}"
		},
		action: func(string) *contracts.JobAction {
			return &contracts.JobAction{Type: contracts.ActionStorageQueue, QueueMessage: &contracts.StorageQueueMessage{
				StorageAccount: "account1", QueueName: "orders", SASToken: "sv=2024-01-01&sig=c2lnbmF0dXJl", Message: "m"}}
		},
		says: "StorageQueue Action - The message could not be sent to queue 'orders' of storage account 'account1': ",
	},
	{
		name:      "ServiceBusQueue over AMQP",
		configure: func(cfg *builtin.Config, hostport string) { cfg.ServiceBus.EndpointTemplate = "sb://" + hostport + "/" },
		action:    serviceBusAction,
		says:      "ServiceBusQueue Action - The message could not be sent to queue 'orders' of namespace 'my-namespace': ",
	},
	{
		name: "ServiceBusQueue over WebSockets",
		configure: func(cfg *builtin.Config, hostport string) {
			cfg.ServiceBus.EndpointTemplate, cfg.ServiceBus.WebSockets = "sb://"+hostport+"/", true
		},
		action: serviceBusAction,
		says:   "ServiceBusQueue Action - The message could not be sent to queue 'orders' of namespace 'my-namespace': ",
	},
}

func serviceBusAction(string) *contracts.JobAction {
	return &contracts.JobAction{Type: contracts.ActionServiceBusQueue, ServiceBusQueueMessage: &contracts.ServiceBusQueueMessage{
		QueueName: "orders",
		ServiceBusMessage: contracts.ServiceBusMessage{Namespace: "my-namespace", Message: "m",
			Authentication: &contracts.ServiceBusAuthentication{SASKeyName: "send", SASKey: "c2VjcmV0LWtleQ=="}},
	}}
}

// Every action type, whether the address comes from the job or from the
// operator's endpoints, is refused every spelling of a refused address,
// and the listener at the loopback ones records no connection.
func TestEverySenderFollowsTheAddressPolicy(t *testing.T) {
	t.Parallel()
	l := netpolicytest.Listen(t)
	hosts := []struct {
		host  string // as written in a URL's authority
		class string // the refusal's class
	}{
		{"127.0.0.1", "a loopback"},
		{"[::1]", "a loopback"},
		{"[::127.0.0.1]", "a loopback"},
		{"[::ffff:0:7f00:1]", "a loopback"},
		{"[::ffff:127.0.0.1]", "a loopback"},
		{"[64:ff9b::7f00:1]", "a loopback"},
		{"0177.0.0.1", "a loopback"},
		{"127.1", "a loopback"},
		{"2130706433", "a loopback"},
		{"0x7f.1", "a loopback"},
		{"localhost", "a loopback"},
		{"loopback.test", "a loopback"},
		{"mapped.test", "a loopback"},
		{"nat64.test", "a loopback"},
		{"169.254.169.254", "a cloud metadata"},
		{"0.0.0.0", "an unspecified"},
		{"10.1.2.3", "a private"},
	}
	for _, s := range senders {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			for _, h := range hosts {
				hostport := h.host + ":" + l.Port
				cfg := builtin.Config{}
				cfg.HTTP.Resolver, cfg.StorageQueue.Resolver, cfg.ServiceBus.Resolver = names, names, names
				s.configure(&cfg, hostport)
				o := sendAsTheWorkerDoes(t, cfg, s.action(hostport))
				if o.Succeeded || !strings.Contains(o.Message, s.says) ||
					!strings.Contains(o.Message, "refused by the address policy: ") || !strings.Contains(o.Message, " is "+h.class+" address") {
					t.Errorf("%s: message %q, want a refusal of %s address after %q", h.host, o.Message, h.class, s.says)
				}
				if strings.Contains(o.Error, "c2VjcmV0") || strings.Contains(o.Error, "client-secret") || strings.Contains(o.Error, "c2lnbmF0dXJl") {
					t.Errorf("%s: the error shows a secret: %q", h.host, o.Error)
				}
			}
		})
	}
	t.Cleanup(func() {
		if n := l.Conns(); n != 0 {
			t.Errorf("the loopback listener recorded %d connections, want 0", n)
		}
	})
}

// sendAsTheWorkerDoes sends action as a worker sends the action of an
// execution message: decoded from the message, within its timeout, by
// the Mux of every sender.
func sendAsTheWorkerDoes(t *testing.T, cfg builtin.Config, action *contracts.JobAction) actions.Outcome {
	t.Helper()
	raw, err := json.Marshal(action)
	if err != nil {
		t.Fatal(err)
	}
	exec := contracts.Execution{
		Version: contracts.MessageVersion, OccurrenceID: "0123456789abcdef0123456789abcdef",
		Job: contracts.JobRef{Collection: "c1", Job: "j1"}, ActionName: contracts.MainAction,
		ExpectedTime: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC), Action: raw, Timeout: contracts.Millis(10 * time.Second / time.Millisecond),
	}
	var decoded contracts.JobAction
	if err := json.Unmarshal(exec.Action, &decoded); err != nil {
		t.Fatal(err)
	}
	mux, err := builtin.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer mux.Close()
	ctx, cancel := context.WithTimeout(context.Background(), exec.Timeout.Duration())
	defer cancel()
	return mux.Send(ctx, &decoded, actions.Attempt{ID: exec.OccurrenceID, Job: exec.Job, ActionName: exec.ActionName, Expected: exec.ExpectedTime})
}
