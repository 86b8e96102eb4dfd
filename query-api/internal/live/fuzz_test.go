package live

import (
	"testing"
)

// FuzzDecodeRequest feeds arbitrary client messages to the decoder: it
// never panics, and what it accepts is a known op with arguments that fit
// it.
func FuzzDecodeRequest(f *testing.F) {
	for _, s := range []string{
		`{"op":"subscribe","args":[{"channel":"orderBookUpdate","marketType":"wholeBlock","instrumentId":"ETH-WB-7"}]}`,
		`{"op":"unsubscribe","args":[{"channel":"recentTrade","marketType":"inclusionPreconf"}]}`,
		`{"op":"query","args":[{"queryType":"recentTrades","instrumentId":"ETH-PC-1","limit":5}]}`,
		`{"op":"login","args":[{"accessToken":"eyJ"}]}`,
		`{"op":"subscribe","args":[{"channel":"accountBalanceUpdate"}]}`,
		`{"op":"query","args":[{"queryType":"currentSlot"}]}`,
		`{"op":1}`, `[]`, `{"op":"subscribe","args":[null]}`, `{"op":"query","args":[{"queryType":"orderBook","instrumentId":"ETH-WB-99999999999999999"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		req, err := DecodeRequest(b)
		if err != nil {
			if _, ok := err.(*protoError); !ok {
				t.Fatalf("error %T is not a protocol error", err)
			}
			_ = errorReply(err.(*protoError))
			return
		}
		if len(req.Args) == 0 || len(req.Args) > maxArgs {
			t.Fatalf("accepted %d args", len(req.Args))
		}
		if len(req.Refused) != len(req.Args) {
			t.Fatalf("%d refusals for %d args", len(req.Refused), len(req.Args))
		}
		for i, a := range req.Args {
			if refused := req.Refused[i]; refused != nil {
				_ = errorReply(refused)
				continue
			}
			switch req.Op {
			case OpLogin:
				if a.AccessToken == "" {
					t.Fatal("login accepted without a token")
				}
			case OpQuery:
				if _, ok := queries[a.QueryType]; !ok {
					t.Fatalf("accepted queryType %q", a.QueryType)
				}
			case OpSubscribe, OpUnsubscribe:
				k, ok := channels[a.Channel]
				if !ok || (k.needsType && a.Family == "") {
					t.Fatalf("accepted %+v", a)
				}
			default:
				t.Fatalf("accepted op %q", req.Op)
			}
			if a.InstrumentID != "" && (a.Family == "" || len(a.InstrumentID) > maxInstrumentLen) {
				t.Fatalf("accepted instrument %+v", a)
			}
		}
	})
}
