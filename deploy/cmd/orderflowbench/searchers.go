package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"blockspace.exchange/deploy/loadtest"
)

// The searcher sockets of a fan-out run live in a child process (this
// binary with -searchers), as the originator load does, so that the
// stack's CPU time is the relay's alone and the clients' reads do not
// queue on the stack's scheduler. The two processes do not share a
// monotonic clock, so times cross between them as wall-clock Unix
// nanoseconds: the parent stamps each transaction just before sending
// it, the child each notification as its read returns.
//
// The exchange with the child, one item a line:
//
//	parent → stdin:  the transaction hashes, then an empty line
//	child → stdout:  "ready" once every socket is open and subscribed
//	child → stdout:  "complete <CPU ns>" when every socket has every hash,
//	                 or when stdin closes (the parent gave up waiting),
//	                 with the CPU time the child used since "ready"
//	child → stdout:  "<index> <unix ns>" per delivery, then exits

// runSearchers is the child: it opens n sockets on url and reports when
// each of them reads each of the hashes given on stdin.
func runSearchers(url string, n int) error {
	in := bufio.NewReader(os.Stdin)
	hashes := map[string]int{}
	for {
		line, err := in.ReadString('\n')
		if err != nil {
			return fmt.Errorf("read hashes: %w", err)
		}
		line = strings.TrimSpace(line)
		if line == "" {
			break
		}
		hashes[line] = len(hashes)
	}
	conns := make([]*websocket.Conn, 0, n)
	dialer := websocket.Dialer{HandshakeTimeout: 10 * time.Second}
	for range n {
		c, _, err := dialer.Dial(url, nil)
		if err != nil {
			return fmt.Errorf("dial socket %d: %w", len(conns), err)
		}
		conns = append(conns, c)
	}
	want := int64(n * len(hashes))
	var got atomic.Int64
	complete := make(chan struct{})
	arrivals := make([][]arrival, n)
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Go(func() { arrivals[i] = readArrivals(c, hashes, len(hashes), &got, want, complete) })
	}
	out := bufio.NewWriter(os.Stdout)
	fmt.Fprintln(out, "ready")
	if err := out.Flush(); err != nil {
		return err
	}
	stopProfile, err := profile(fmt.Sprintf("searchers-%d", n))
	if err != nil {
		return err
	}
	cpu0 := loadtest.ProcessCPU()
	stdinClosed := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, in); close(stdinClosed) }()
	select {
	case <-complete:
	case <-stdinClosed:
	}
	fmt.Fprintln(out, "complete", int64(loadtest.ProcessCPU()-cpu0))
	stopProfile()
	_ = out.Flush()
	for _, c := range conns {
		_ = c.Close()
	}
	wg.Wait()
	for _, as := range arrivals {
		for _, a := range as {
			fmt.Fprintln(out, a.idx, a.at)
		}
	}
	return out.Flush()
}

// arrival is one socket's read of one transaction.
type arrival struct {
	idx int
	at  int64 // wall clock, Unix ns
}

// readArrivals reads notifications from c until it closes or has all of
// them; the one that makes the total want closes complete.
func readArrivals(c *websocket.Conn, hashes map[string]int, per int, got *atomic.Int64, want int64, complete chan struct{}) []arrival {
	local := make([]arrival, 0, per)
	var buf bytes.Buffer
	key := []byte(`"hash":"`)
	for {
		_, r, err := c.NextReader()
		if err != nil {
			return local
		}
		buf.Reset()
		if _, err := buf.ReadFrom(r); err != nil {
			return local
		}
		at := time.Now().UnixNano()
		msg := buf.Bytes()
		i := bytes.Index(msg, key)
		if i < 0 || len(msg) < i+len(key)+66 {
			continue
		}
		idx, ok := hashes[string(msg[i+len(key):i+len(key)+66])]
		if !ok {
			continue
		}
		local = append(local, arrival{idx, at})
		if got.Add(1) == want {
			close(complete)
		}
	}
}

// searchers is a running child process with its sockets open.
type searchers struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Scanner
}

// startSearchers starts the child with n sockets on url, subscribed to
// the given hashes, and returns once they are all open.
func startSearchers(url string, n int, hashes []string) (*searchers, error) {
	cmd := exec.Command(os.Args[0], "-searchers", url, "-sockets", strconv.Itoa(n), "-cpuprofile", profilePrefix)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &searchers{cmd: cmd, stdin: stdin, out: bufio.NewScanner(stdout)}
	if _, err := io.WriteString(stdin, strings.Join(hashes, "\n")+"\n\n"); err != nil {
		s.kill()
		return nil, fmt.Errorf("searcher process: %w", err)
	}
	if !s.out.Scan() || s.out.Text() != "ready" {
		s.kill()
		return nil, fmt.Errorf("searcher process did not open its sockets: %q %v", s.out.Text(), cmd.Wait())
	}
	return s, nil
}

func (s *searchers) kill() { _ = s.cmd.Process.Kill(); _ = s.cmd.Wait() }

// wait returns once every socket read every hash, or after timeout, with
// the CPU time the child used for reading.
func (s *searchers) wait(timeout time.Duration) (time.Duration, error) {
	t := time.AfterFunc(timeout, func() { _ = s.stdin.Close() })
	defer t.Stop()
	var cpu int64
	if !s.out.Scan() {
		s.kill()
		return 0, fmt.Errorf("searcher process ended: %v", s.out.Err())
	}
	if _, err := fmt.Sscanf(s.out.Text(), "complete %d", &cpu); err != nil {
		s.kill()
		return 0, fmt.Errorf("searcher process printed %q", s.out.Text())
	}
	return time.Duration(cpu), nil
}

// arrivals reads the deliveries the child noted and waits for it to end.
func (s *searchers) arrivals() ([]arrival, error) {
	_ = s.stdin.Close()
	var out []arrival
	for s.out.Scan() {
		f := strings.Fields(s.out.Text())
		if len(f) != 2 {
			continue
		}
		idx, err1 := strconv.Atoi(f[0])
		at, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("searcher process printed %q", s.out.Text())
		}
		out = append(out, arrival{idx, at})
	}
	if err := s.cmd.Wait(); err != nil {
		return nil, fmt.Errorf("searcher process: %w", err)
	}
	return out, nil
}
