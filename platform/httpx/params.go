package httpx

import (
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"
)

// QueryInt64 reads an integer query parameter. A missing parameter gives
// (def, nil) unless required; a malformed or out-of-range one is a 400
// that names the parameter.
func QueryInt64(c *gin.Context, name string, required bool, def, min, max int64) (int64, error) {
	raw, ok := c.GetQuery(name)
	if !ok || raw == "" {
		if required {
			return 0, Invalid("query parameter %s is required", name)
		}
		return def, nil
	}
	v, err := ParseInt64(raw)
	if err != nil {
		return 0, Invalid("query parameter %s must be an integer, got %q", name, truncate(raw))
	}
	if v < min || v > max {
		return 0, Invalid("query parameter %s must be between %d and %d, got %d", name, min, max, v)
	}
	return v, nil
}

// QueryBool reads a boolean query parameter: true or false in any case,
// or 1 and 0. A missing or empty parameter gives def; anything else is a
// 400 that names the parameter.
func QueryBool(c *gin.Context, name string, def bool) (bool, error) {
	raw, ok := c.GetQuery(name)
	if !ok || raw == "" {
		return def, nil
	}
	switch strings.ToLower(raw) {
	case "true", "1":
		return true, nil
	case "false", "0":
		return false, nil
	}
	return false, Invalid("query parameter %s must be true or false, got %q", name, truncate(raw))
}

// ParseInt64 accepts decimal and 0x-prefixed hexadecimal integers, as
// chain ids are written both ways (1, 0x88BB0).
func ParseInt64(s string) (int64, error) {
	if len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
		return strconv.ParseInt(s[2:], 16, 64)
	}
	return strconv.ParseInt(s, 10, 64)
}

// truncate keeps echoed client input short in messages and logs.
func truncate(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
