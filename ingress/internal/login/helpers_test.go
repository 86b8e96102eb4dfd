package login

import (
	"errors"

	"blockspace.exchange/platform/httpx"
)

func classifyCode(err error) int {
	var e *httpx.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return -1
}
