package testkit

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

func TestServersStart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, js := JetStream(t, NATS(t))
	if _, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: "T", Subjects: []string{"t.>"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "t.x", []byte("x")); err != nil {
		t.Fatal(err)
	}
	rdb, prefix, _ := Redis(t)
	if err := rdb.Set(ctx, prefix+":k", "v", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if v := rdb.Get(ctx, prefix+":k").Val(); v != "v" {
		t.Fatalf("got %q", v)
	}
}
