package faults

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// socketOwner names the process, among pids (process id → name), that
// holds the TCP socket whose local address is addr: the caller's end of a
// connection the sink accepted. It reads /proc/net/tcp for the socket's
// inode, then the processes' file descriptors for that socket. It returns
// "" when none of them holds it.
func socketOwner(addr string, pids map[int]string) string {
	inode := socketInode("/proc/net/tcp", addr)
	if inode == "" {
		return ""
	}
	target := "socket:[" + inode + "]"
	for pid, name := range pids {
		dir := fmt.Sprintf("/proc/%d/fd", pid)
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if link, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && link == target {
				return name
			}
		}
	}
	return ""
}

// socketInode returns the inode of the IPv4 TCP socket whose local
// address is addr (host:port), from a /proc/net/tcp table.
func socketInode(table, addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return ""
	}
	want, ok := procAddress(host, port)
	if !ok {
		return ""
	}
	f, err := os.Open(table)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
		// A closed socket in TIME_WAIT on the same port has inode 0: the
		// open one may follow it.
		if len(fields) >= 10 && fields[1] == want && fields[9] != "0" {
			return fields[9]
		}
	}
	return ""
}

// procAddress writes an IPv4 address and port as /proc/net/tcp does on a
// little-endian machine: the address as a host-order word in hex, then
// the port in hex ("0100007F:1F90" for 127.0.0.1:8080).
func procAddress(host, port string) (string, bool) {
	ip := net.ParseIP(host).To4()
	p, err := strconv.Atoi(port)
	if ip == nil || err != nil {
		return "", false
	}
	return fmt.Sprintf("%02X%02X%02X%02X:%04X", ip[3], ip[2], ip[1], ip[0], p), true
}
