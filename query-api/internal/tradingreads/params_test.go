package tradingreads

import (
	"errors"
	"math"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"blockspace.exchange/platform/httpx"
	"blockspace.exchange/topics"
)

func queryContext(rawQuery string) *gin.Context {
	c, _ := gin.CreateTestContext(httptest.NewRecorder())
	c.Request = httptest.NewRequest("GET", "/x", nil)
	c.Request.URL.RawQuery = rawQuery
	return c
}

func TestParseOrderQuery(t *testing.T) {
	wb := newFamily(topics.WholeBlock)
	cases := []struct {
		query string
		want  orderQuery
	}{
		{"instrumentId=ETH-WB-7", orderQuery{"ETH-WB-7", allOrders, page{0, true, DefaultLimit}}},
		{"instrumentId=ETH-WB-7&asc=false", orderQuery{"ETH-WB-7", allOrders, page{math.MaxInt64, false, DefaultLimit}}},
		{"instrumentId=ETH-WB-7&asc=false&startId=50", orderQuery{"ETH-WB-7", allOrders, page{50, false, DefaultLimit}}},
		{"instrumentId=ETH-WB-7&onbook=true&startId=9&limit=100", orderQuery{"ETH-WB-7", liveOrders, page{9, true, MaxLimit}}},
		{"instrumentId=ETH-WB-7&done=1&onbook=0&limit=1", orderQuery{"ETH-WB-7", finalOrders, page{0, true, 1}}},
		{"instrumentId=ETH-WB-7&onbook=&done=&asc=&startId=&limit=", orderQuery{"ETH-WB-7", allOrders, page{0, true, DefaultLimit}}},
	}
	for _, tc := range cases {
		t.Run(tc.query, func(t *testing.T) {
			got, err := parseOrderQuery(queryContext(tc.query), wb, true)
			if err != nil || got != tc.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
	if q, err := parseOrderQuery(queryContext(""), wb, false); err != nil || q.instrument != "" {
		t.Fatalf("optional instrument: %+v, %v", q, err)
	}
}

func TestFamilies(t *testing.T) {
	wb, pc := newFamily(topics.WholeBlock), newFamily(topics.InclusionPreconf)
	if wb.prefix != "ETH-WB-" || pc.prefix != "ETH-PC-" {
		t.Fatalf("prefixes %q %q", wb.prefix, pc.prefix)
	}
	for _, slot := range []uint64{0, 1, 12_345_678, familySpan - 1} {
		if m := topics.MarketID(topics.WholeBlock, slot); m < wb.minMarket || m > wb.maxMarket || (m >= pc.minMarket && m <= pc.maxMarket) {
			t.Errorf("whole-block market %d outside its family's range", m)
		}
		if m := topics.MarketID(topics.InclusionPreconf, slot); m < pc.minMarket || m > pc.maxMarket || (m >= wb.minMarket && m <= wb.maxMarket) {
			t.Errorf("inclusion-preconf market %d outside its family's range", m)
		}
	}
}

// FuzzParseQueries feeds any query string to the order and trade list
// parsers: each either refuses it with a 400 code 1001 that names a
// parameter, or returns a query within the documented bounds whose
// instrument belongs to the path's family.
func FuzzParseQueries(f *testing.F) {
	for _, s := range []string{
		"", "instrumentId=ETH-WB-1", "instrumentId=ETH-PC-1&onbook=true&done=true", "instrumentId=ETH-WB-01",
		"instrumentId=ETH-WB-1&limit=101&startId=-1", "instrumentId=ETH-WB-1&asc=false&startId=0",
		"instrumentId=%00&limit=%ff", "instrumentId=ETH-WB-18446744073709551616", "limit=0x10&startId=0x7fffffffffffffff",
	} {
		f.Add(s, true, true)
	}
	params := []string{"instrumentId", "onbook", "done", "startId", "asc", "limit"}
	f.Fuzz(func(t *testing.T, raw string, wholeBlock, required bool) {
		fam := newFamily(topics.InclusionPreconf)
		if wholeBlock {
			fam = newFamily(topics.WholeBlock)
		}
		check := func(instrument string, p page, err error) {
			if err != nil {
				var appErr *httpx.Error
				if !errors.As(err, &appErr) || appErr.Code != topics.CodeValidation || appErr.Status != 400 {
					t.Fatalf("%q: error %v is not a validation error", raw, err)
				}
				for _, name := range params {
					if strings.Contains(appErr.Message, name) {
						return
					}
				}
				t.Fatalf("%q: message %q names no parameter", raw, appErr.Message)
			}
			if p.limit < 1 || p.limit > MaxLimit || p.start < 0 {
				t.Fatalf("%q: page %+v out of bounds", raw, p)
			}
			if instrument == "" && required {
				t.Fatalf("%q: required instrument missing", raw)
			}
			if instrument != "" {
				got, _, err := topics.ParseInstrumentID(instrument)
				if err != nil || got != fam.name {
					t.Fatalf("%q: instrument %q is not of family %s", raw, instrument, fam.name)
				}
			}
		}
		q, err := parseOrderQuery(queryContext(raw), fam, required)
		check(q.instrument, q.page, err)
		if err == nil && q.status != allOrders && q.status != liveOrders && q.status != finalOrders {
			t.Fatalf("%q: status filter %d", raw, q.status)
		}
		tq, err := parseTradeQuery(queryContext(raw), fam, required)
		check(tq.instrument, tq.page, err)
		if err == nil && tq.asc {
			t.Fatalf("%q: trades are listed newest first", raw)
		}
	})
}
