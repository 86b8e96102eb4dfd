package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"blockspace.exchange/topics"
)

// socketWatch is one WebSocket a trader, logged in and subscribed to
// accountOrderUpdate as docs/websocket.md shows: it notes when each order
// of the trader was first reported filled (status 10), as the trader
// would learn it.
type socketWatch struct {
	mu     sync.Mutex
	filled map[int64]time.Time // order id: its filled update read
	conns  []*websocket.Conn
}

// orderPush is the part of an accountOrderUpdate push the watch reads.
// Time is read so that "E" does not land in E: encoding/json matches keys
// without regard to case unless one matches exactly.
type orderPush struct {
	E    string `json:"e"`
	Time int64  `json:"E"`
	P    struct {
		OrderID int64 `json:"orderId"`
		Status  int   `json:"status"`
	} `json:"P"`
}

// newSocketWatch opens a socket for each trader on the stack at base
// (http://host:port) and waits until each is subscribed.
func newSocketWatch(ctx context.Context, base string, traders []*trader) (*socketWatch, error) {
	w := &socketWatch{filled: make(map[int64]time.Time)}
	url := "ws" + strings.TrimPrefix(base, "http") + "/ws"
	for _, tr := range traders {
		c, resp, err := websocket.DefaultDialer.DialContext(ctx, url, nil)
		if err != nil {
			w.close()
			return nil, fmt.Errorf("open the trader's WebSocket: %w", err)
		}
		resp.Body.Close()
		w.conns = append(w.conns, c)
		token := strings.TrimPrefix(tr.bearer, "Bearer ")
		for _, msg := range []string{
			fmt.Sprintf(`{"op":"login","args":[{"accessToken":%q}]}`, token),
			`{"op":"subscribe","args":[{"channel":"accountOrderUpdate"}]}`,
		} {
			if err := c.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
				w.close()
				return nil, err
			}
			if err := expectEvent(c); err != nil {
				w.close()
				return nil, err
			}
		}
	}
	return w, nil
}

// expectEvent reads the acknowledgement of a login or subscribe: code 0.
func expectEvent(c *websocket.Conn) error {
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	defer c.SetReadDeadline(time.Time{})
	_, raw, err := c.ReadMessage()
	if err != nil {
		return fmt.Errorf("WebSocket acknowledgement: %w", err)
	}
	var ack struct {
		Event string `json:"event"`
		Code  int    `json:"code"`
	}
	if json.Unmarshal(raw, &ack) != nil || ack.Code != 0 || ack.Event == "error" {
		return fmt.Errorf("WebSocket refused: %s", raw)
	}
	return nil
}

// run reads every socket until ctx ends.
func (w *socketWatch) run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, c := range w.conns {
		wg.Go(func() { w.read(c) })
	}
	<-ctx.Done()
	w.close()
	wg.Wait()
}

func (w *socketWatch) read(c *websocket.Conn) {
	for {
		_, raw, err := c.ReadMessage()
		if err != nil {
			return
		}
		at := time.Now()
		var p orderPush
		if json.Unmarshal(raw, &p) != nil || p.E != "accountOrderUpdate" || p.P.Status != topics.OrderStatusDone {
			continue
		}
		w.mu.Lock()
		if _, ok := w.filled[p.P.OrderID]; !ok {
			w.filled[p.P.OrderID] = at
		}
		w.mu.Unlock()
	}
}

func (w *socketWatch) close() {
	for _, c := range w.conns {
		_ = c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
		_ = c.Close()
	}
}

// saw reports whether the filled update of every order of ids was read.
func (w *socketWatch) saw(ids map[int64]time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for id := range ids {
		if _, ok := w.filled[id]; !ok {
			return false
		}
	}
	return true
}

// seen returns a copy of the filled updates read so far.
func (w *socketWatch) seen() map[int64]time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[int64]time.Time, len(w.filled))
	for id, at := range w.filled {
		out[id] = at
	}
	return out
}
