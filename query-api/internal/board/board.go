// Package board serves the market board at GET /: one page, plain HTML,
// CSS and JavaScript embedded in the binary, that shows the current slot,
// a price chart of a market family (candles and volume, drawn as SVG),
// the open markets of both families and a chosen market's book and
// trades, updating live over the WebSocket at /ws.
package board

import (
	"embed"
	"net/http"
	"path"

	"github.com/gin-gonic/gin"

	"blockspace.exchange/platform/httpx"
	"blockspace.exchange/topics"
)

//go:embed static
var static embed.FS

// assets are the files the page loads, with their content types.
var assets = map[string]string{
	"board.css": "text/css; charset=utf-8",
	"board.js":  "text/javascript; charset=utf-8",
}

// policy lets the page load only its own files and open its own
// WebSocket.
const policy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self' ws: wss:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Register mounts GET / and GET /board/{file}.
func Register(r gin.IRouter) {
	r.GET("/", func(c *gin.Context) { serve(c, "index.html", "text/html; charset=utf-8") })
	r.GET("/board/:file", func(c *gin.Context) {
		name := path.Base(c.Param("file"))
		ctype, ok := assets[name]
		if !ok {
			httpx.Fail(c, &httpx.Error{Status: http.StatusNotFound, Code: topics.CodeValidation,
				Key: "error.notFound", Message: "no such board file: " + name})
			return
		}
		serve(c, name, ctype)
	})
}

func serve(c *gin.Context, name, ctype string) {
	b, err := static.ReadFile("static/" + name)
	if err != nil {
		c.AbortWithStatus(http.StatusInternalServerError)
		return
	}
	c.Header("Content-Security-Policy", policy)
	c.Header("X-Content-Type-Options", "nosniff")
	c.Header("Cache-Control", "no-cache")
	c.Data(http.StatusOK, ctype, b)
}
