package flow

import (
	"context"
	"net/http"

	"blockspace.exchange/platform/jsonrpc"
	of "blockspace.exchange/platform/orderflow"
)

// Searchers serves {searcher_url}/v1/<API_KEY> over HTTP POST.
type Searchers struct {
	keys    *of.Keys
	methods of.SearcherMethods
}

// NewSearchers returns the searcher HTTP endpoint.
func NewSearchers(keys *of.Keys, methods of.SearcherMethods) *Searchers {
	return &Searchers{keys: keys, methods: methods}
}

// Call answers one searcher request. The methods count what they answer;
// what is answered before them is counted here.
func (s *Searchers) Call(ctx context.Context, call jsonrpc.Call) (any, error) {
	id, err := s.identify(ctx, call)
	if err != nil {
		s.methods.Submissions.Count(call.Req.Method, err)
		return nil, err
	}
	return s.methods.Call(ctx, id, call.Req)
}

// identify authenticates the key in the path of a searcher call and
// refuses the WebSocket's methods.
func (s *Searchers) identify(ctx context.Context, call jsonrpc.Call) (of.Identity, error) {
	key, ok := PathKey(call.HTTP.URL.Path)
	if !ok || key == "" {
		return of.Identity{}, &jsonrpc.Error{Code: jsonrpc.CodeRule, Message: "searchers use /v1/<API_KEY>", HTTPStatus: http.StatusUnauthorized}
	}
	id, err := s.keys.Lookup(ctx, key)
	if err != nil {
		return of.Identity{}, keyError(err)
	}
	if call.Req.Method == of.MethodSubscribe || call.Req.Method == of.MethodUnsubscribe {
		return of.Identity{}, jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "method %q needs the WebSocket endpoint", call.Req.Method)
	}
	return id, nil
}
