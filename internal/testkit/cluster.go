package testkit

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisCluster starts a Redis Cluster of three primaries (redis-server
// processes on free loopback ports, data in a temporary folder) and
// returns its URL for redis.ParseClusterURL, with every node as a seed.
// Without redis-server and redis-cli on the PATH the test is skipped,
// unless CI is "true", where it fails.
func RedisCluster(t testing.TB) string {
	t.Helper()
	server, errServer := exec.LookPath("redis-server")
	cli, errCLI := exec.LookPath("redis-cli")
	if errServer != nil || errCLI != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI needs redis-server and redis-cli for the Redis Cluster test")
		}
		t.Skip("redis-server and redis-cli are not installed")
	}
	var addrs []string
	for i := range 3 {
		port := clusterPort(t)
		dir := filepath.Join(t.TempDir(), strconv.Itoa(i))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(server, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
			"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--save", "", "--appendonly", "no")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		Eventually(t, 10*time.Second, func() bool {
			c, err := net.Dial("tcp", addr)
			if err == nil {
				c.Close()
			}
			return err == nil
		}, "redis-server on %s did not start", addr)
		addrs = append(addrs, addr)
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	if out, err := exec.Command(cli, append(args, "--cluster-replicas", "0", "--cluster-yes")...).CombinedOutput(); err != nil {
		t.Fatalf("creating the Redis Cluster: %v\n%s", err, out)
	}
	url := "redis://" + addrs[0] + "?addr=" + addrs[1] + "&addr=" + addrs[2]
	opts, err := redis.ParseClusterURL(url)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClusterClient(opts)
	defer rdb.Close()
	// Every node, not only the one asked first, must see the cluster up
	// before commands spread over them (CLUSTERDOWN otherwise).
	Eventually(t, 20*time.Second, func() bool {
		return rdb.ForEachShard(context.Background(), func(ctx context.Context, node *redis.Client) error {
			info, err := node.ClusterInfo(ctx).Result()
			if err == nil && !strings.Contains(info, "cluster_state:ok") {
				err = errors.New("cluster_state is not ok")
			}
			return err
		}) == nil
	}, "the Redis Cluster did not become ready on every node")
	return url
}

// clusterPort returns a loopback port that is free, as is the port 10000
// above it, which a cluster node uses for its bus.
func clusterPort(t testing.TB) int {
	t.Helper()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if port+10000 > 65535 {
			continue
		}
		bus, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port+10000)))
		if err != nil {
			continue
		}
		bus.Close()
		return port
	}
	t.Fatal("found no free port pair for a Redis Cluster node")
	return 0
}
