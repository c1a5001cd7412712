//go:build unix

package testkit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// natsBuilt is the nats-server binary a test process built.
var natsBuilt struct {
	once      sync.Once
	dir, path string
	err       error
}

// NATSServerBinary builds nats-server from the Go module the scheduler
// already requires (so it works offline, from the module cache) once per
// test process, and returns its path. A package that uses it removes the
// build with RemoveNATSServerBinary in its TestMain.
func NATSServerBinary(t testing.TB) string {
	t.Helper()
	natsBuilt.once.Do(func() {
		if natsBuilt.dir, natsBuilt.err = os.MkdirTemp("", "nats-server-bin"); natsBuilt.err != nil {
			return
		}
		natsBuilt.path = filepath.Join(natsBuilt.dir, "nats-server")
		if out, err := exec.Command("go", "build", "-o", natsBuilt.path, "github.com/nats-io/nats-server/v2").CombinedOutput(); err != nil {
			natsBuilt.err = fmt.Errorf("building nats-server: %v\n%s", err, out)
		}
	})
	if natsBuilt.err != nil {
		t.Fatal(natsBuilt.err)
	}
	return natsBuilt.path
}

// RemoveNATSServerBinary removes what NATSServerBinary built; call it from
// TestMain after the tests ran.
func RemoveNATSServerBinary() {
	if natsBuilt.dir != "" {
		_ = os.RemoveAll(natsBuilt.dir)
	}
}

// JetStreamCluster is a JetStream cluster of nats-server processes on
// loopback, each with its own store, client, cluster and monitoring ports,
// routed to every other.
type JetStreamCluster struct {
	// Nodes are the servers, n1, n2, … in order.
	Nodes []*NATSNode

	t    testing.TB
	once sync.Once
	nc   *nats.Conn
	js   jetstream.JetStream
	err  error
}

// NATSNode is one server of a JetStreamCluster. Kill (-9), Pause, Resume
// and Start (again, on the same ports and store) come from its Process.
type NATSNode struct {
	*Process
	// ServerName is its server_name, the name stream infos give leaders.
	ServerName string
	// ClientPort, ClusterPort and MonitorPort are its loopback ports.
	ClientPort, ClusterPort, MonitorPort int
	// StoreDir is its JetStream store.
	StoreDir string
	// Config is its configuration file.
	Config string
}

// URL returns the node's client URL.
func (n *NATSNode) URL() string { return "nats://127.0.0.1:" + strconv.Itoa(n.ClientPort) }

// MonitorURL returns the base URL of the node's monitoring endpoints.
func (n *NATSNode) MonitorURL() string { return "http://127.0.0.1:" + strconv.Itoa(n.MonitorPort) }

// monitor gets path from the node's monitoring endpoint and decodes its
// JSON into v; it returns the status code.
func (n *NATSNode) monitor(ctx context.Context, path string, v any) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, n.MonitorURL()+path, nil)
	if err != nil {
		return 0, err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", n.ServerName, err)
	}
	defer res.Body.Close()
	if err := json.NewDecoder(res.Body).Decode(v); err != nil {
		return res.StatusCode, fmt.Errorf("%s: %s: %w", n.ServerName, path, err)
	}
	return res.StatusCode, nil
}

// Healthy returns nil when the node's /healthz answers 200: it runs, and
// its JetStream is current with the cluster's.
func (n *NATSNode) Healthy(ctx context.Context) error {
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
	}
	code, err := n.monitor(ctx, "/healthz", &body)
	if code == 0 {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("%s: /healthz %d %s %s", n.ServerName, code, body.Status, body.Error)
	}
	return nil
}

// Routes returns how many routes the node has to other servers.
func (n *NATSNode) Routes(ctx context.Context) (int, error) {
	var body struct {
		Routes []struct {
			RemoteName string `json:"remote_name"`
		} `json:"routes"`
	}
	if _, err := n.monitor(ctx, "/routez", &body); err != nil {
		return 0, err
	}
	peers := map[string]bool{}
	for _, r := range body.Routes {
		peers[r.RemoteName] = true
	}
	return len(peers), nil
}

// Clients returns how many client connections named name the node holds
// (the scheduler's roles name theirs "scheduler planner", "scheduler
// worker", "scheduler history").
func (n *NATSNode) Clients(ctx context.Context, name string) (int, error) {
	var body struct {
		Connections []struct {
			Name string `json:"name"`
		} `json:"connections"`
	}
	if _, err := n.monitor(ctx, "/connz?limit=4096", &body); err != nil {
		return 0, err
	}
	count := 0
	for _, c := range body.Connections {
		if c.Name == name {
			count++
		}
	}
	return count, nil
}

// NATSCluster starts a JetStream cluster of size nats-server processes
// (configuration files and stores in a temporary folder, sync_interval
// always), waits until every node is healthy and returns it. The test's
// cleanup kills the nodes.
func NATSCluster(t testing.TB, size int) *JetStreamCluster {
	t.Helper()
	bin := NATSServerBinary(t)
	dir := t.TempDir()
	c := &JetStreamCluster{t: t}
	for i := range size {
		name := fmt.Sprintf("n%d", i+1)
		c.Nodes = append(c.Nodes, &NATSNode{
			ServerName: name, ClientPort: FreePort(t), ClusterPort: FreePort(t), MonitorPort: FreePort(t),
			StoreDir: filepath.Join(dir, name, "store"), Config: filepath.Join(dir, name+".conf"),
		})
	}
	for _, n := range c.Nodes {
		var routes []string
		for _, o := range c.Nodes {
			if o != n {
				routes = append(routes, strconv.Quote("nats-route://127.0.0.1:"+strconv.Itoa(o.ClusterPort)))
			}
		}
		conf := fmt.Sprintf(`server_name: %q
listen: "127.0.0.1:%d"
http: "127.0.0.1:%d"
logtime: true
jetstream {
  store_dir: %q
  sync_interval: always
}
cluster {
  name: "faults"
  listen: "127.0.0.1:%d"
  routes: [%s]
}
`, n.ServerName, n.ClientPort, n.MonitorPort, n.StoreDir, n.ClusterPort, strings.Join(routes, ", "))
		if err := os.WriteFile(n.Config, []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
		n.Process = StartProcess(t, "nats "+n.ServerName, filepath.Join(dir, n.ServerName+".log"), nil, bin, "-c", n.Config)
	}
	t.Cleanup(func() {
		if c.nc != nil {
			c.nc.Close()
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := c.WaitHealthy(ctx); err != nil {
		t.Fatalf("the NATS cluster did not become healthy: %v", err)
	}
	return c
}

// URLs returns the client URLs of every node, comma-separated, as
// --nats-url takes them.
func (c *JetStreamCluster) URLs() string {
	urls := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		urls[i] = n.URL()
	}
	return strings.Join(urls, ",")
}

// Node returns the node named name (a server_name), nil when there is
// none.
func (c *JetStreamCluster) Node(name string) *NATSNode {
	for _, n := range c.Nodes {
		if n.ServerName == name {
			return n
		}
	}
	return nil
}

// JetStream returns a connection to the cluster (every node as a seed,
// reconnecting for ever) and its JetStream context, made on first use and
// closed when the test ends.
func (c *JetStreamCluster) JetStream() (*nats.Conn, jetstream.JetStream, error) {
	c.once.Do(func() {
		c.nc, c.err = nats.Connect(c.URLs(), nats.Name("test"), nats.MaxReconnects(-1),
			nats.ReconnectWait(100*time.Millisecond), nats.RetryOnFailedConnect(true))
		if c.err == nil {
			c.js, c.err = jetstream.New(c.nc)
		}
	})
	return c.nc, c.js, c.err
}

// infoTimeout bounds one request for a stream's info: while a stream
// elects a leader the request has no answer, and the callers poll.
const infoTimeout = 2 * time.Second

// StreamInfo returns the stream's info as the cluster answers it now,
// within 2 s.
func (c *JetStreamCluster) StreamInfo(ctx context.Context, stream string) (*jetstream.StreamInfo, error) {
	_, js, err := c.JetStream()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, infoTimeout)
	defer cancel()
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", stream, err)
	}
	return s.CachedInfo(), nil
}

// LeaderOf returns the node leading stream (a KV bucket's stream is
// KV_<bucket>).
func (c *JetStreamCluster) LeaderOf(ctx context.Context, stream string) (*NATSNode, error) {
	info, err := c.StreamInfo(ctx, stream)
	if err != nil {
		return nil, err
	}
	if info.Cluster == nil || info.Cluster.Leader == "" {
		return nil, fmt.Errorf("stream %s has no leader now", stream)
	}
	n := c.Node(info.Cluster.Leader)
	if n == nil {
		return nil, fmt.Errorf("stream %s is led by %q, not a node of this cluster", stream, info.Cluster.Leader)
	}
	return n, nil
}

// MoveLeader makes node lead stream: it asks the leader to step down in
// favour of node, and waits until node leads (or ctx ends).
func (c *JetStreamCluster) MoveLeader(ctx context.Context, stream string, node *NATSNode) error {
	nc, _, err := c.JetStream()
	if err != nil {
		return err
	}
	for {
		leader, err := c.LeaderOf(ctx, stream)
		if err == nil && leader == node {
			return nil
		}
		if err == nil {
			body, _ := json.Marshal(map[string]any{"placement": map[string]string{"preferred": node.ServerName}})
			rctx, cancel := context.WithTimeout(ctx, infoTimeout)
			var msg *nats.Msg
			msg, err = nc.RequestWithContext(rctx, "$JS.API.STREAM.LEADER.STEPDOWN."+stream, body)
			cancel()
			var answer struct {
				Error *struct {
					Description string `json:"description"`
				} `json:"error"`
			}
			if err == nil && json.Unmarshal(msg.Data, &answer) == nil && answer.Error != nil {
				err = errors.New(answer.Error.Description)
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("moving the lead of %s to %s: %v", stream, node.ServerName, err)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// StreamCurrent returns nil when stream has a leader and every replica is
// online and current.
func (c *JetStreamCluster) StreamCurrent(ctx context.Context, stream string) error {
	info, err := c.StreamInfo(ctx, stream)
	if err != nil {
		return err
	}
	if info.Cluster == nil || info.Cluster.Leader == "" {
		return fmt.Errorf("stream %s has no leader", stream)
	}
	var errs []error
	for _, p := range info.Cluster.Replicas {
		if p.Offline || !p.Current {
			errs = append(errs, fmt.Errorf("stream %s: replica %s is offline or behind (offline %t, current %t, lag %d)",
				stream, p.Name, p.Offline, p.Current, p.Lag))
		}
	}
	return errors.Join(errs...)
}

// WaitHealthy waits until every node answers /healthz with 200 and has a
// route to every other node, or ctx ends.
func (c *JetStreamCluster) WaitHealthy(ctx context.Context) error {
	for {
		err := c.Healthy(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Healthy returns nil when every node answers /healthz with 200 and has a
// route to every other node, else what is wrong.
func (c *JetStreamCluster) Healthy(ctx context.Context) error {
	var errs []error
	for _, n := range c.Nodes {
		if err := n.Healthy(ctx); err != nil {
			errs = append(errs, err)
			continue
		}
		if routes, err := n.Routes(ctx); err != nil {
			errs = append(errs, err)
		} else if routes < len(c.Nodes)-1 {
			errs = append(errs, fmt.Errorf("%s: routes to %d of %d other nodes", n.ServerName, routes, len(c.Nodes)-1))
		}
	}
	return errors.Join(errs...)
}
