package devpostgres

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
)

// systemPort is where a distribution's own PostgreSQL listens. We never pick
// it, even when it is free now, because a system server may start later.
const systemPort = 5432

// choosePort returns the port to start on. An explicit port must be free. With
// none, the port remembered from the last start is reused when free, so that
// URLs held by other processes keep working across restarts.
func choosePort(explicit int, portFile string) (int, error) {
	if explicit != 0 {
		if !portFree(explicit) {
			return 0, fmt.Errorf("choose port: 127.0.0.1:%d is in use", explicit)
		}
		return explicit, nil
	}
	if remembered, ok := readPort(portFile); ok && remembered != systemPort && portFree(remembered) {
		return remembered, nil
	}
	return freePort()
}

// freePort asks the kernel for a free port. Ephemeral ports never include
// 5432 on Linux, but the check keeps that true on any configuration.
func freePort() (int, error) {
	for range 10 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("choose port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		if err := l.Close(); err != nil {
			return 0, fmt.Errorf("choose port: %w", err)
		}
		if port != systemPort {
			return port, nil
		}
	}
	return 0, errors.New("choose port: the kernel keeps offering 5432")
}

// portFree reports whether 127.0.0.1:port can be bound. The answer can go
// stale before postgres binds; startEmbedded retries on a new port then.
func portFree(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

// readPort returns the remembered port, if any readable one is there.
func readPort(path string) (int, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	port, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || port <= 0 || port > 65535 {
		return 0, false
	}
	return port, true
}

func writePort(path string, port int) error {
	if err := os.WriteFile(path, []byte(strconv.Itoa(port)+"\n"), 0o600); err != nil {
		return fmt.Errorf("remember port: %w", err)
	}
	return nil
}
