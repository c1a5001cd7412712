package faults

import (
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

func TestProcAddress(t *testing.T) {
	t.Parallel()
	if got, ok := procAddress("127.0.0.1", "8080"); !ok || got != "0100007F:1F90" {
		t.Errorf("got %q %t", got, ok)
	}
	if _, ok := procAddress("::1", "8080"); ok {
		t.Error("an IPv6 address has no IPv4 form")
	}
}

func TestSocketInodeReadsTheTable(t *testing.T) {
	t.Parallel()
	table := filepath.Join(t.TempDir(), "tcp")
	data := "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n" +
		"   0: 0100007F:1F90 0100007F:0051 06 00000000:00000000 03:00000F3B 00000000     0        0 0 3 0000000000000000\n" +
		"   1: 0100007F:1F90 0100007F:0050 01 00000000:00000000 00:00000000 00000000  1000        0 424242 1 0 20 4 30 10 -1\n"
	if err := os.WriteFile(table, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := socketInode(table, "127.0.0.1:8080"); got != "424242" {
		t.Errorf("inode %q", got)
	}
	if got := socketInode(table, "127.0.0.1:8081"); got != "" {
		t.Errorf("inode %q for an address not in the table", got)
	}
}

// The sink tells which process made a call: here the test process itself.
func TestSocketOwnerFindsTheCallingProcess(t *testing.T) {
	t.Parallel()
	addrs := make(chan string, 1)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		addrs <- socketOwner(r.RemoteAddr, map[int]string{os.Getpid(): "me"})
	})}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(l) }()
	defer srv.Close()
	res, err := http.Get("http://" + l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if got := <-addrs; got != "me" {
		t.Errorf("owner %q, want me", got)
	}
}
