package tradingreads

import (
	"math"
	"strings"

	"github.com/gin-gonic/gin"

	"blockspace.exchange/platform/httpx"
	"blockspace.exchange/topics"
)

// statusFilter is what the onbook and done parameters select.
type statusFilter int

const (
	allOrders   statusFilter = iota // neither: every order
	liveOrders                      // onbook=true: topics.LiveOrderStatuses
	finalOrders                     // done=true: topics.FinalOrderStatuses
)

// clause is the filter as a SQL condition on the status column of o. The
// lists are literal SQL, never parameters, so that the planner can use the
// partial indexes whose predicate is the live list.
func (s statusFilter) clause() string {
	switch s {
	case liveOrders:
		return " AND o.status IN " + topics.LiveOrderStatusList()
	case finalOrders:
		return " AND o.status IN " + topics.FinalOrderStatusList()
	}
	return ""
}

// page is a keyset position: rows whose id is start or beyond it in the
// direction of the page, at most limit of them. The next page starts
// after the last id seen (last + 1 ascending, last − 1 descending).
type page struct {
	start int64
	asc   bool
	limit int
}

// cmp and dir are the SQL of the page's direction; literal, never input.
func (p page) cmp() string {
	if p.asc {
		return ">="
	}
	return "<="
}

func (p page) dir() string {
	if p.asc {
		return "ASC"
	}
	return "DESC"
}

// orderQuery is a parsed order list request.
type orderQuery struct {
	instrument string // "" lists every instrument of the family (own reads only)
	status     statusFilter
	page
}

// tradeQuery is a parsed trade list request; trades are listed newest
// first.
type tradeQuery struct {
	instrument string
	page
}

// parseOrderQuery reads instrumentId, onbook, done, startId, asc and
// limit. startId 0 (the default) starts at the oldest order ascending and
// at the newest descending.
func parseOrderQuery(c *gin.Context, fam family, instrumentRequired bool) (orderQuery, error) {
	var q orderQuery
	var err error
	if q.instrument, err = parseInstrument(c, fam, instrumentRequired); err != nil {
		return q, err
	}
	if q.status, err = parseStatus(c); err != nil {
		return q, err
	}
	if q.asc, err = httpx.QueryBool(c, "asc", true); err != nil {
		return q, err
	}
	if q.start, err = parseStart(c, q.asc); err != nil {
		return q, err
	}
	q.limit, err = parseLimit(c)
	return q, err
}

// parseTradeQuery reads instrumentId, startId (0: the newest trade) and
// limit.
func parseTradeQuery(c *gin.Context, fam family, instrumentRequired bool) (tradeQuery, error) {
	var q tradeQuery
	var err error
	if q.instrument, err = parseInstrument(c, fam, instrumentRequired); err != nil {
		return q, err
	}
	if q.start, err = parseStart(c, false); err != nil {
		return q, err
	}
	q.limit, err = parseLimit(c)
	return q, err
}

// parseStatus reads onbook and done. Each restricts the list to one set
// of statuses, so both at once would select nothing: that is refused.
func parseStatus(c *gin.Context) (statusFilter, error) {
	onbook, err := httpx.QueryBool(c, "onbook", false)
	if err != nil {
		return 0, err
	}
	done, err := httpx.QueryBool(c, "done", false)
	if err != nil {
		return 0, err
	}
	switch {
	case onbook && done:
		return 0, httpx.Invalid("query parameters onbook and done cannot both be true: onbook lists live orders (status %s), done lists final ones %s",
			strings.Trim(topics.LiveOrderStatusList(), "()"), topics.FinalOrderStatusList())
	case onbook:
		return liveOrders, nil
	case done:
		return finalOrders, nil
	}
	return allOrders, nil
}

// parseInstrument reads instrumentId, which must name a market of the
// path's family. An absent or empty optional one is "".
func parseInstrument(c *gin.Context, fam family, required bool) (string, error) {
	raw := c.Query("instrumentId")
	if raw == "" {
		if required {
			return "", httpx.Invalid("query parameter instrumentId is required (%s<slot>)", fam.prefix)
		}
		return "", nil
	}
	f, _, err := topics.ParseInstrumentID(raw)
	if err != nil {
		return "", httpx.Invalid("query parameter instrumentId must be %s<slot>, got %q", fam.prefix, short(raw))
	}
	if f != fam.name {
		return "", httpx.Invalid("query parameter instrumentId %s is not a %s instrument (%s<slot>); use the %s path", short(raw), fam.name, fam.prefix, f)
	}
	return raw, nil
}

// parseStart reads startId, a non-negative order or trade id; 0 means no
// bound, which descending is the largest id.
func parseStart(c *gin.Context, asc bool) (int64, error) {
	start, err := httpx.QueryInt64(c, "startId", false, 0, 0, math.MaxInt64)
	if err == nil && start == 0 && !asc {
		start = math.MaxInt64
	}
	return start, err
}

// parseLimit reads the page size: default 10, at most 100.
func parseLimit(c *gin.Context) (int, error) {
	n, err := httpx.QueryInt64(c, "limit", false, DefaultLimit, 1, MaxLimit)
	return int(n), err
}

// short keeps echoed client input short in messages.
func short(s string) string {
	if len(s) > 40 {
		return strings.ToValidUTF8(s[:40], "") + "…"
	}
	return s
}
