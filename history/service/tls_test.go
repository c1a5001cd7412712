package service

import (
	"context"
	"crypto/tls"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/streams"
	"github.com/jobscheduler/scheduler/internal/testkit"
)

// The history role against a NATS server that demands client
// certificates: with the CA and its certificate it creates its consumer,
// and it serves its endpoints over TLS.
func TestHistoryOverMutualTLS(t *testing.T) {
	t.Parallel()
	ca := testkit.NewCA(t)
	ns := testkit.NATSWith(t, server.Options{TLSConfig: ca.ServerTLS(t, true), TLSVerify: true, TLSTimeout: 5})
	client, endpoints := ca.Client(t, "history"), ca.Server(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var logs testkit.Logs
	svc, err := Start(ctx, Config{
		NATSURL: ns.ClientURL(), NATS: streams.ConnectOptions{CAFile: ca.File, CertFile: client.CertFile, KeyFile: client.KeyFile},
		Listen: "127.0.0.1:0", TLSCertFile: endpoints.CertFile, TLSKeyFile: endpoints.KeyFile, Logger: logs.Logger(),
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, logs.String())
	}
	defer svc.Stop(context.Background())
	if _, err := svc.nc.TLSConnectionState(); err != nil {
		t.Errorf("the NATS connection is not TLS: %v", err)
	}
	js, err := jetstream.New(svc.nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.Consumer(ctx, contracts.ResultsStream, contracts.HistoryConsumer); err != nil {
		t.Fatalf("the history consumer: %v", err)
	}
	https := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool}}}
	res, err := https.Get("https://" + svc.Addr() + "/readyz")
	if err != nil {
		t.Fatalf("/readyz over TLS: %v", err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("/readyz: %d", res.StatusCode)
	}

	t.Run("without a client certificate it fails naming the refusal", func(t *testing.T) {
		_, err := Start(ctx, Config{NATSURL: ns.ClientURL(), NATS: streams.ConnectOptions{CAFile: ca.File}, Logger: logs.Logger()})
		// The server's alert, or, when the first write meets the closed
		// connection before the alert is read, its closing.
		if err == nil || !strings.Contains(err.Error(), "certificate required") && !strings.Contains(err.Error(), "refused this role's client certificate") {
			t.Fatalf("err %v, want the server's refusal", err)
		}
	})
}
