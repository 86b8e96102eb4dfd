package httpx

import (
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"
)

// envelope is the success body of every REST response.
type envelope struct {
	Success bool `json:"success"`
	Data    any  `json:"data"`
}

// errorBody is the ApplicationError of the interface.
type errorBody struct {
	Success bool     `json:"success"`
	Code    int      `json:"code"`
	Key     string   `json:"errorMsgKey"`
	Message string   `json:"message"`
	Data    struct{} `json:"data"`
}

var (
	okPrefix        = []byte(`{"success":true,"data":`)
	closeBrace      = []byte("}")
	jsonContentType = []string{"application/json; charset=utf-8"}
)

// OK answers 200 with data inside the success envelope.
func OK(c *gin.Context, data any) {
	c.JSON(http.StatusOK, envelope{Success: true, Data: data})
}

// OKRaw answers 200 with data that is already JSON, so hot read paths can
// serve a pre-encoded body without marshalling per request.
func OKRaw(c *gin.Context, data []byte) {
	c.Writer.Header()["Content-Type"] = jsonContentType
	c.Status(http.StatusOK)
	_, _ = c.Writer.Write(okPrefix)
	_, _ = c.Writer.Write(data)
	_, _ = c.Writer.Write(closeBrace)
}

// Fail records err for the error middleware and stops the handler chain.
// Handlers return right after calling it.
func Fail(c *gin.Context, err error) {
	_ = c.Error(err)
	c.Abort()
}

// Partial records err, which a handler worked around while it still
// answers success (part of a request done, the rest answered as not
// processed): the request is logged at warn with err.
func Partial(c *gin.Context, err error) {
	_ = c.Error(err)
}

// writeError renders an application error with the headers its status
// requires by the interface.
func writeError(c *gin.Context, e *Error) {
	h := c.Writer.Header()
	switch e.Status {
	case http.StatusUnauthorized:
		h.Set("WWW-Authenticate", "Bearer")
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		retry := e.RetryAfter
		if retry < 1 {
			retry = 1
		}
		h.Set("Retry-After", strconv.Itoa(retry))
	}
	msg := e.Message
	if e.Status == http.StatusInternalServerError {
		msg = "unexpected error; quote request id " + RequestID(c) + " when reporting it"
	}
	c.JSON(e.Status, errorBody{Code: e.Code, Key: e.Key, Message: msg})
}
