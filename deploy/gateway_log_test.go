package deploy

import (
	"regexp"
	"strings"
	"testing"
)

// credentialVariables are nginx variables that carry a credential when
// logged: the request line and URI hold /v1/<API_KEY> paths and
// refreshToken= query strings, headers and cookies hold bearer tokens and
// refresh cookies.
var credentialVariables = regexp.MustCompile(`^(request|request_uri|args|query_string|arg_.*|uri|document_uri|request_body|http_authorization|http_cookie|cookie_.*)$`)

// TestGatewayAccessLogCarriesNoCredentials: the access log's format uses
// none of the variables that hold credentials, and the path it logs has
// every API key replaced and no query string, on every port.
func TestGatewayAccessLogCarriesNoCredentials(t *testing.T) {
	conf := parseNginx(t, gatewayConfPath)
	http := conf.http(t)
	formats := http.all("log_format")
	if len(formats) == 0 {
		t.Fatal("nginx.conf: no log_format")
	}
	for _, f := range formats {
		for _, part := range f[1:] {
			for _, m := range regexp.MustCompile(`\$\{?([A-Za-z0-9_]+)`).FindAllStringSubmatch(part, -1) {
				if credentialVariables.MatchString(m[1]) {
					t.Errorf("log_format %s logs $%s, which can carry a credential", f[0], m[1])
				}
			}
		}
	}
	for _, l := range http.all("access_log") {
		if l[0] != "off" && (len(l) < 2 || l[1] != "gateway") {
			t.Errorf("access_log %v does not use the gateway format", l)
		}
	}

	const key = "ofk_" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	paths := conf.mapOf(t, "$log_path")
	if paths.source != "$server_port:$request_uri" {
		t.Fatalf("$log_path maps %s, want $server_port:$request_uri", paths.source)
	}
	for _, tc := range []struct {
		port      string
		uri, want string
	}{
		{"8081", "/v1/" + key, "/v1/<API_KEY>"},
		{"8081", "/v1/not-even-a-key?x=1", "/v1/<API_KEY>"},
		{"8081", "/v1", "/v1"},
		{"8082", "/v1/" + key, "/v1/<API_KEY>"},
		{"8083", "/v1/" + key + "/tx/0xabc", "/v1/<API_KEY>/tx/0xabc"},
		{"8083", "/v1/" + key + "/refunds?from=1", "/v1/<API_KEY>/refunds"},
		{"8083", "/v1/mistyped/refunds", "/v1/<API_KEY>/refunds"},
		{"8083", "/v1/tx/0xabc", "/v1/tx/0xabc"},
		{"8083", "/v1/bundle?hash=0xabc", "/v1/bundle"},
		{"8083", "/v1/auth/account", "/v1/auth/account"},
		{"8080", "/api/v1/user/login/refresh?refreshToken=secret", "/api/v1/user/login/refresh"},
		{"8080", "/v1/user/login/refresh?refreshToken=secret", "/v1/user/login/refresh"},
		{"8080", "/api/v1/p/markets", "/api/v1/p/markets"},
		{"8080", "/x/" + key + "/y", "/x/<API_KEY>/y"},
	} {
		got := paths.expand(t, tc.port+":"+tc.uri)
		if got != tc.want {
			t.Errorf(":%s %s is logged as %q, want %q", tc.port, tc.uri, got, tc.want)
		}
		if strings.Contains(got, key) || strings.Contains(got, "secret") || strings.Contains(got, "not-even") || strings.Contains(got, "mistyped") {
			t.Errorf(":%s %s: the logged path %q holds a credential", tc.port, tc.uri, got)
		}
	}
}
