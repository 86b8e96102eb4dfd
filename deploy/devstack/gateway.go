package devstack

import "net/http"

// gateway presents one REST base address: reads (GET, HEAD) go to
// query-api, every other method to ingress. deploy/gateway/nginx.conf is
// the same rule for the production shape; both services know the whole
// interface, so a wrong method reaches a service that answers 400.
type gateway struct {
	reads, writes http.Handler
}

func (g gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		g.reads.ServeHTTP(w, r)
		return
	}
	g.writes.ServeHTTP(w, r)
}
