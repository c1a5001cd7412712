package health

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jobscheduler/scheduler/internal/testkit"
)

// get sends one keep-alive request on conn and reads the answer's status.
func get(t *testing.T, conn net.Conn, r *bufio.Reader) int {
	t.Helper()
	if _, err := io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatalf("writing a request: %v", err)
	}
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func TestIdleKeepAliveConnectionsAreClosed(t *testing.T) {
	s, err := ListenRole("127.0.0.1:0", Checks{}, nil, Limits{IdleTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown(t.Context()) })
	var conns []net.Conn
	for range 50 {
		conn, err := net.Dial("tcp", s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		if status := get(t, conn, bufio.NewReader(conn)); status != http.StatusOK {
			t.Fatalf("status %d", status)
		}
		conns = append(conns, conn)
	}
	// Each idle connection must be closed by the server: a read ends with
	// EOF well before the deadline, which is far beyond the idle timeout.
	for i, conn := range conns {
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := conn.Read(make([]byte, 1)); err != io.EOF {
			t.Fatalf("connection %d: read gave %v, want EOF (closed by the server)", i, err)
		}
	}
}

func TestSlowHeadersAreCutOff(t *testing.T) {
	s, err := ListenRole("127.0.0.1:0", Checks{}, nil, Limits{ReadHeaderTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown(t.Context()) })
	conn, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Half a request line, and nothing more: the server gives up on it.
	if _, err := io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHo"); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	// ReadAll ends at EOF: the server closed the connection (after a
	// 400 at most), long before the read deadline.
	rest, err := io.ReadAll(conn)
	if err != nil {
		t.Fatalf("the server kept the connection: %v", err)
	}
	if len(rest) > 0 && !strings.HasPrefix(string(rest), "HTTP/1.1 4") {
		t.Fatalf("answer to a request never finished: %q", rest)
	}
}

func TestConnectionsBeyondTheLimitWait(t *testing.T) {
	s, err := ListenRole("127.0.0.1:0", Checks{}, nil, Limits{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown(t.Context()) })
	var held []net.Conn
	for range 2 {
		conn, err := net.Dial("tcp", s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		get(t, conn, bufio.NewReader(conn))
		held = append(held, conn)
	}
	third, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer third.Close()
	if _, err := io.WriteString(third, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	answered := make(chan int, 1)
	go func() {
		resp, err := http.ReadResponse(bufio.NewReader(third), nil)
		if err != nil {
			answered <- 0
			return
		}
		resp.Body.Close()
		answered <- resp.StatusCode
	}()
	// While two connections are held, the third is not served; it is once
	// one of them closes.
	select {
	case status := <-answered:
		t.Fatalf("a third connection was served (%d) while the limit of 2 was reached", status)
	case <-time.After(300 * time.Millisecond):
	}
	held[0].Close()
	var status int
	testkit.Eventually(t, 10*time.Second, func() bool {
		select {
		case status = <-answered:
			return true
		default:
			return false
		}
	}, "the third connection is served once one closes")
	if status != http.StatusOK {
		t.Fatalf("status %d", status)
	}
	held[1].Close()
}
