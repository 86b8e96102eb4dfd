package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"blockspace.exchange/deploy/loadtest"
)

// The originator load runs in a child process (this binary with -load),
// so that the stack's CPU time per request is measured apart from the
// load generator's: on two cores shared by both, the rate alone mixes
// them.

// runLoad is the child: it reads signed transactions from stdin, one a
// line, sends each once, in order, over workers keep-alive connections
// until d is over or they run out, and prints how many were accepted and
// in how many nanoseconds.
func runLoad(url string, workers int, d time.Duration) error {
	var txs []string
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		txs = append(txs, sc.Text())
	}
	if err := sc.Err(); err != nil {
		return err
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers * 2}}
	var idx atomic.Int64
	var firstErr atomic.Value
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				i := int(idx.Add(1)) - 1
				if i >= len(txs) {
					return
				}
				if err := send(client, url, txs[i]); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		return err
	}
	fmt.Println(min(int(idx.Load()), len(txs)), time.Since(start).Nanoseconds())
	return nil
}

// send submits one signed transaction with eth_sendRawTransaction.
func send(client *http.Client, url, raw string) error {
	body := `{"jsonrpc":"2.0","id":1,"method":"eth_sendRawTransaction","params":["` + raw + `"]}`
	resp, err := client.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		return err
	}
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Contains(out, []byte(`"result"`)) {
		return fmt.Errorf("send: %d %s", resp.StatusCode, out)
	}
	return nil
}

// loadResult is what one child run did.
type loadResult struct {
	n                    int
	elapsed              time.Duration
	serverCPU, clientCPU time.Duration // of this process and of the child
}

// loadInChild runs the load in a child process against url.
func loadInChild(url string, txs []string, workers int, d time.Duration) (loadResult, error) {
	cmd := exec.Command(os.Args[0], "-load", url, "-workers", strconv.Itoa(workers), "-duration", d.String())
	cmd.Stdin = strings.NewReader(strings.Join(txs, "\n") + "\n")
	cmd.Stderr = os.Stderr
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		return loadResult{}, err
	}
	cpu0 := loadtest.ProcessCPU()
	if err := cmd.Wait(); err != nil {
		return loadResult{}, fmt.Errorf("load process: %w", err)
	}
	r := loadResult{serverCPU: loadtest.ProcessCPU() - cpu0}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.clientCPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	var ns int64
	if _, err := fmt.Sscan(out.String(), &r.n, &ns); err != nil {
		return loadResult{}, fmt.Errorf("load process printed %q", out.String())
	}
	r.elapsed = time.Duration(ns)
	return r, nil
}
