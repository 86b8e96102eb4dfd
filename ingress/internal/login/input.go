package login

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"mime"
	"net/url"
	"strings"
	"unicode/utf8"

	"blockspace.exchange/platform/httpx"
)

// MaxDisplayName is the longest display name, in characters.
const MaxDisplayName = 64

// maxUserAgent bounds the User-Agent kept with a session.
const maxUserAgent = 512

// Params collects the parameters of a login request: the query string,
// then a form body or a JSON object body (the /v1 presentation), where the
// body wins over the query for a name given twice. JSON strings are taken
// as they are and JSON numbers as written (the interface types ids as
// integers and the transfer quantity as a number), each then checked as
// its form value is; other JSON values are refused.
func Params(query, contentType string, body []byte) (url.Values, error) {
	v, err := url.ParseQuery(query)
	if err != nil {
		return nil, httpx.Invalid("query string is malformed: %v", err)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return v, nil
	}
	media, _, _ := mime.ParseMediaType(contentType)
	switch media {
	case "application/x-www-form-urlencoded":
		form, err := url.ParseQuery(string(body))
		if err != nil {
			return nil, httpx.Invalid("form body is malformed: %v", err)
		}
		for k, vals := range form {
			v[k] = vals
		}
	case "application/json":
		var obj map[string]any
		if err := httpx.DecodeJSONBytes(body, &obj); err != nil {
			return nil, err
		}
		for k, raw := range obj {
			switch x := raw.(type) {
			case nil:
			case string:
				v.Set(k, x)
			case json.Number: // DecodeJSONBytes keeps numbers as written
				v.Set(k, x.String())
			default:
				return nil, httpx.Invalid("field %s must be a string or a number", truncate(k))
			}
		}
	default:
		return nil, httpx.UnsupportedMedia("body must be a form (application/x-www-form-urlencoded) or JSON, got Content-Type %q", truncate(contentType))
	}
	return v, nil
}

// LoginInput is the input of POST login.
type LoginInput struct {
	Address string // lower-case 0x hex
	Name    string
}

// ParseLogin validates the parameters of POST login.
func ParseLogin(v url.Values) (LoginInput, error) {
	addr, err := parseAddress("addr", v.Get("addr"))
	if err != nil {
		return LoginInput{}, err
	}
	name, err := parseDisplayName("name", v.Get("name"), false)
	if err != nil {
		return LoginInput{}, err
	}
	return LoginInput{Address: addr, Name: name}, nil
}

// VerifyInput is the input of POST login/verify.
type VerifyInput struct {
	Address   string
	Nonce     string // 0x + 8 lower-case hex digits
	Signature []byte
	UserAgent string
}

// ParseVerify validates the parameters and User-Agent of POST login/verify.
func ParseVerify(v url.Values, userAgent string) (VerifyInput, error) {
	addr, err := parseAddress("addr", v.Get("addr"))
	if err != nil {
		return VerifyInput{}, err
	}
	nonce, err := parseNonce(v.Get("nonceHash"))
	if err != nil {
		return VerifyInput{}, err
	}
	sig, err := parseHex("signature", v.Get("signature"), 65)
	if err != nil {
		return VerifyInput{}, err
	}
	ua, err := parseUserAgent(userAgent)
	if err != nil {
		return VerifyInput{}, err
	}
	return VerifyInput{Address: addr, Nonce: nonce, Signature: sig, UserAgent: ua}, nil
}

// ParseRefresh validates the refresh credential (from the parameter, else
// the cookie) and the User-Agent of POST login/refresh.
func ParseRefresh(v url.Values, cookie, userAgent string) (string, string, error) {
	tok := strings.TrimSpace(v.Get("refreshToken"))
	if tok == "" {
		tok = cookie
	}
	if tok == "" {
		return "", "", httpx.Unauthorized("a refresh credential is required: cookie " + CookieName + " or parameter refreshToken")
	}
	if _, err := decodeRefreshToken(tok); err != nil {
		return "", "", httpx.Unauthorized("refresh credential is malformed")
	}
	ua, err := parseUserAgent(userAgent)
	if err != nil {
		return "", "", err
	}
	return tok, ua, nil
}

func parseUserAgent(ua string) (string, error) {
	ua = strings.TrimSpace(ua)
	if ua == "" {
		return "", httpx.Invalid("header User-Agent is required")
	}
	if len(ua) > maxUserAgent || !utf8.ValidString(ua) {
		return "", httpx.Invalid("header User-Agent must be valid UTF-8 of at most %d bytes", maxUserAgent)
	}
	return ua, nil
}

// parseAddress accepts a 20-byte hex address with 0x prefix in any case
// and returns it lower-case; ownership is proven by the signature, so no
// checksum is required here.
func parseAddress(name, s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", httpx.Invalid("%s is required", name)
	}
	if len(s) != 42 || (s[:2] != "0x" && s[:2] != "0X") || !isHex(s[2:]) {
		return "", httpx.Invalid("%s must be a 0x-prefixed 20-byte hex address, got %q", name, truncate(s))
	}
	return "0x" + strings.ToLower(s[2:]), nil
}

func parseNonce(s string) (string, error) {
	b, err := parseHex("nonceHash", s, 4)
	if err != nil {
		return "", err
	}
	return "0x" + hex.EncodeToString(b), nil
}

// parseHex decodes 0x-prefixed (or bare) hex of exactly n bytes.
func parseHex(name, s string, n int) ([]byte, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, httpx.Invalid("%s is required", name)
	}
	if strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X") {
		s = s[2:]
	}
	if len(s) != 2*n || !isHex(s) {
		return nil, httpx.Invalid("%s must be %d bytes of hex (%d hex digits)", name, n, 2*n)
	}
	b, _ := hex.DecodeString(s)
	return b, nil
}

func parseDisplayName(name, s string, required bool) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" && required {
		return "", httpx.Invalid("%s is required", name)
	}
	if !utf8.ValidString(s) || utf8.RuneCountInString(s) > MaxDisplayName {
		return "", httpx.Invalid("%s must be valid text of at most %d characters", name, MaxDisplayName)
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return "", httpx.Invalid("%s must not contain control characters", name)
		}
	}
	return s, nil
}

// ParseDisplayName validates a required display name (POST user/update).
func ParseDisplayName(s string) (string, error) { return parseDisplayName("displayName", s, true) }

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

func truncate(s string) string {
	if len(s) > 48 {
		s = s[:48] + "…"
	}
	return strings.ToValidUTF8(s, "?")
}

// jsonString marshals a document that cannot fail to marshal.
func jsonString(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
