package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"blockspace.exchange/platform/serve"
)

// bareOrder is the request body the bare handler decodes, as ingress does.
type bareOrder struct {
	AccountID    int64  `json:"accountId"`
	InstrumentID string `json:"instrumentId"`
	Side         bool   `json:"side"`
	OrderType    int    `json:"orderType"`
	Quantity     string `json:"quantity"`
	Price        string `json:"price"`
}

// startBare serves the place routes of both families with a bare gin
// handler: it reads and decodes the body as ingress does and answers the
// bytes of an answer the stack gave (an accepted order), with nothing
// behind it. It is the baseline: the same clients and requests with the
// HTTP server and JSON alone.
func startBare(ctx context.Context, answer []byte) (string, error) {
	gin.SetMode(gin.ReleaseMode)
	e := gin.New()
	place := func(c *gin.Context) {
		body, err := io.ReadAll(c.Request.Body)
		var o bareOrder
		if err != nil || c.GetHeader("Authorization") == "" || json.Unmarshal(body, &o) != nil {
			c.AbortWithStatus(http.StatusBadRequest)
			return
		}
		c.Data(http.StatusOK, "application/json; charset=utf-8", answer)
	}
	e.POST("/api/v1/wholeblock/order", place)
	e.POST("/api/v1/inclusion-preconf/order", place)
	ln, err := serve.Listen("127.0.0.1:0")
	if err != nil {
		return "", err
	}
	go func() { _ = serve.HTTP(ctx, ln, e, time.Second) }()
	return "http://" + ln.Addr().String(), nil
}
