package orderentry

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/platform/auth"
	"blockspace.exchange/platform/httpx"
	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/topics"
)

// Cancels look the named orders up in the `orders` table (rows ingress
// wrote at placement, moved on by the settler from the matcher's order
// events) and publish the cancel commands of the live ones. Code 1 means
// the cancel was accepted and sent: the matcher decides, and an order
// that traded or ended before the command arrives is answered on
// order-events with order.cancel_rejected. Cancels reserve nothing, so
// they are published directly; when Kafka does not acknowledge them the
// answer is 503 and nothing was sent.

// cancelItem is one result of cancel-order and cancel-batch-orders.
type cancelItem struct {
	OrderID       *int64  `json:"orderId"`
	ClientOrderID *string `json:"clientOrderId"`
	// Code is 1 when the cancel was sent, else 108 (no such live order of
	// the account in that market) or 109 (already done or cancelled), by
	// ingress or, when its decision arrived in time, by the matcher.
	Code int `json:"code"`
	// Status is the order's status once the matcher cancelled it (11);
	// null while its decision has not arrived.
	Status  *int   `json:"status"`
	Message string `json:"message,omitempty"`
}

// orderRow is what a cancel needs of a stored order.
type orderRow struct {
	id         int64
	instrument string
	clientID   *string
	status     int
}

// cancelOrder answers cancel-order: one item.
func (s *Service) cancelOrder(c *gin.Context, fam topics.Family) ([]cancelItem, error) {
	req, err := bodyOf(c, decodeCancel)
	if err != nil {
		return nil, err
	}
	userID := auth.FromContext(c).User.UserID
	slot, err := s.target(c, fam, userID, req.AccountID, req.InstrumentID)
	if err != nil {
		return nil, err
	}
	var rows []orderRow
	if req.OrderID != 0 {
		rows, err = s.ordersByID(c, req.AccountID, []int64{req.OrderID})
	} else {
		rows, err = s.liveByClientID(c, req.AccountID, req.InstrumentID, []string{req.ClientOrderID})
	}
	if err != nil {
		return nil, err
	}
	j := judge{instrument: req.InstrumentID, rows: rows, named: map[int64]bool{}}
	var item cancelItem
	if req.OrderID != 0 {
		item = j.byID(req.OrderID)
	} else {
		item = j.byClientID(req.ClientOrderID)
	}
	if item.Code == topics.CodeCancelled {
		cmd := topics.OrderCancel{UserID: userID, AccountID: req.AccountID, InstrumentID: req.InstrumentID,
			OrderID: *item.OrderID, ClientOrderID: req.ClientOrderID}
		items := []cancelItem{item}
		return items, s.cancelAndAwait(c, []cancelCommand{{topics.TypeOrderCancel, slot, cmd}}, items)
	}
	return []cancelItem{item}, nil
}

// cancelBatch judges orderIds first, then clientOrderIds, each in the
// order given, as the matcher does; an order named twice answers 109 the
// second time.
func (s *Service) cancelBatch(c *gin.Context, fam topics.Family) ([]cancelItem, error) {
	req, err := bodyOf(c, func(b []byte) (cancelBatch, error) { return decodeCancelBatch(b, s.cfg.MaxCancelOrders) })
	if err != nil {
		return nil, err
	}
	userID := auth.FromContext(c).User.UserID
	slot, err := s.target(c, fam, userID, req.AccountID, req.InstrumentID)
	if err != nil {
		return nil, err
	}
	byID, err := s.ordersByID(c, req.AccountID, req.OrderIDs)
	if err != nil {
		return nil, err
	}
	byClient, err := s.liveByClientID(c, req.AccountID, req.InstrumentID, req.ClientOrderIDs)
	if err != nil {
		return nil, err
	}
	j := judge{instrument: req.InstrumentID, rows: append(byID, byClient...), named: map[int64]bool{}}
	items := make([]cancelItem, 0, len(req.OrderIDs)+len(req.ClientOrderIDs))
	var live []int64
	for _, id := range req.OrderIDs {
		items = append(items, j.byID(id))
	}
	for _, id := range req.ClientOrderIDs {
		items = append(items, j.byClientID(id))
	}
	for _, it := range items {
		if it.Code == topics.CodeCancelled {
			live = append(live, *it.OrderID)
		}
	}
	if len(live) > 0 {
		cmd := topics.OrderCancelBatch{UserID: userID, AccountID: req.AccountID, InstrumentID: req.InstrumentID, OrderIDs: live}
		if err := s.cancelAndAwait(c, []cancelCommand{{topics.TypeOrderCancelBatch, slot, cmd}}, items); err != nil {
			return nil, err
		}
	}
	return items, nil
}

// cancelAndAwait publishes one cancel command and waits up to AnswerWait
// for the matcher's decision, which then replaces the sent items' code 1:
// status 11 for each order it cancelled, or its 108 or 109 refusal.
func (s *Service) cancelAndAwait(ctx context.Context, cmds []cancelCommand, items []cancelItem) error {
	decs, err := s.publishCancels(ctx, cmds)
	if err != nil || decs == nil {
		return err
	}
	defer s.decisions.forgetCancels(decs)
	dec := decs[0]
	if !await(ctx, s.cfg.AnswerWait, decs) || !dec.events {
		return nil
	}
	for i := range items {
		it := &items[i]
		if it.Code != topics.CodeCancelled {
			continue
		}
		out, ok := dec.cancelled[*it.OrderID]
		if !ok && it.ClientOrderID != nil {
			out, ok = dec.byClient[*it.ClientOrderID]
		}
		switch {
		case !ok:
		case out.code == topics.CodeCancelled:
			status := topics.OrderStatusCancelledByUser
			it.Status = &status
		default:
			it.Code, it.Message = out.code, out.message
		}
	}
	return nil
}

// cancelAll publishes one order.cancel_all per open market of the family
// (or the one named) in which the account has live orders, and answers
// the ids of the live orders it asked to cancel. Markets whose trading
// closed are left out: their orders expire, or already have and the
// settler has not caught up.
func (s *Service) cancelAll(c *gin.Context, fam topics.Family) ([]int64, error) {
	req, err := bodyOf(c, decodeCancelAll)
	if err != nil {
		return nil, err
	}
	userID := auth.FromContext(c).User.UserID
	if req.InstrumentID != "" {
		if _, err := familySlot(fam, req.InstrumentID); err != nil {
			return nil, err
		}
	}
	if err := s.accounts.check(c, userID, req.AccountID); err != nil {
		return nil, err
	}
	lo := topics.MarketID(fam, 0)
	rows, err := s.pool.Query(c, `SELECT instrument_id, order_id FROM orders
		WHERE account_id = $1 AND status IN `+topics.LiveOrderStatusList()+` AND market_id BETWEEN $2 AND $3 AND ($4 = '' OR instrument_id = $4)
		ORDER BY order_id`, req.AccountID, lo, lo+marketIDsPerFamily-1, req.InstrumentID)
	if err != nil {
		return nil, fmt.Errorf("read live orders: %w", err)
	}
	byInstrument := make(map[string][]int64)
	var order []string
	var instrument string
	var id int64
	if _, err := pgx.ForEachRow(rows, []any{&instrument, &id}, func() error {
		if _, seen := byInstrument[instrument]; !seen {
			order = append(order, instrument)
		}
		byInstrument[instrument] = append(byInstrument[instrument], id)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("read live orders: %w", err)
	}
	now := s.cfg.Now()
	cancelled := []int64{}
	var cmds []cancelCommand
	for _, inst := range order {
		if m := s.catalog.Lookup(inst); m == nil || !m.Open(now) {
			continue
		}
		slot, err := familySlot(fam, inst)
		if err != nil {
			return nil, fmt.Errorf("stored order of %s: %w", inst, err)
		}
		cmds = append(cmds, cancelCommand{topics.TypeOrderCancelAll, slot,
			topics.OrderCancelAll{UserID: userID, AccountID: req.AccountID, InstrumentID: inst}})
		cancelled = append(cancelled, byInstrument[inst]...)
	}
	decs, err := s.publishCancels(c, cmds)
	if err != nil {
		return nil, err
	}
	if decs != nil {
		defer s.decisions.forgetCancels(decs)
		if await(c, s.cfg.AnswerWait, decs) {
			cancelled = cancelled[:0]
			for _, dec := range decs {
				for id, out := range dec.cancelled {
					if out.code == topics.CodeCancelled {
						cancelled = append(cancelled, id)
					}
				}
			}
		}
	}
	slices.Sort(cancelled)
	return cancelled, nil
}

// marketIDsPerFamily is the width of a family's range of market ids
// (docs/api.md "Values and identifiers": 1×10^12 + slot, 2×10^12 + slot).
const marketIDsPerFamily = 1_000_000_000_000

// target checks the instrument and the account of a cancel and returns
// the instrument's slot.
func (s *Service) target(ctx context.Context, fam topics.Family, userID, accountID int64, instrument string) (uint64, error) {
	slot, err := familySlot(fam, instrument)
	if err != nil {
		return 0, err
	}
	return slot, s.accounts.check(ctx, userID, accountID)
}

// familySlot returns the slot of an instrument id of fam; another
// family's or a malformed id is a 400.
func familySlot(fam topics.Family, instrument string) (uint64, error) {
	f, slot, err := topics.ParseInstrumentID(instrument)
	if err != nil || f != fam {
		return 0, httpx.Invalid("instrumentId %q is not an instrument of the %s family (%s)", short(instrument), fam, topics.InstrumentID(fam, 0)[:7]+"<slot>")
	}
	return slot, nil
}

func (s *Service) ordersByID(ctx context.Context, accountID int64, ids []int64) ([]orderRow, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT order_id, instrument_id, client_order_id, status FROM orders
		WHERE order_id = ANY($1) AND account_id = $2`, ids, accountID)
	return collectOrders(rows, err)
}

// liveByClientID returns the newest live order of each client order id.
func (s *Service) liveByClientID(ctx context.Context, accountID int64, instrument string, ids []string) ([]orderRow, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT DISTINCT ON (client_order_id) order_id, instrument_id, client_order_id, status FROM orders
		WHERE account_id = $1 AND instrument_id = $2 AND client_order_id = ANY($3) AND status IN `+topics.LiveOrderStatusList()+`
		ORDER BY client_order_id, order_id DESC`, accountID, instrument, ids)
	return collectOrders(rows, err)
}

func collectOrders(rows pgx.Rows, err error) ([]orderRow, error) {
	if err != nil {
		return nil, fmt.Errorf("read orders: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (orderRow, error) {
		var o orderRow
		err := r.Scan(&o.id, &o.instrument, &o.clientID, &o.status)
		return o, err
	})
	if err != nil {
		return nil, fmt.Errorf("read orders: %w", err)
	}
	return out, nil
}

// judge answers each named order of one cancel request.
type judge struct {
	instrument string
	rows       []orderRow
	named      map[int64]bool // orders already answered 1 in this request
}

func (j *judge) byID(id int64) cancelItem {
	item := cancelItem{OrderID: &id}
	i := slices.IndexFunc(j.rows, func(o orderRow) bool { return o.id == id && o.instrument == j.instrument })
	if i < 0 {
		item.Code, item.Message = topics.CodeNoSuchOrder, fmt.Sprintf("no order %d of this account in %s", id, j.instrument)
		return item
	}
	return j.live(item, j.rows[i])
}

func (j *judge) byClientID(clientID string) cancelItem {
	item := cancelItem{ClientOrderID: &clientID}
	i := slices.IndexFunc(j.rows, func(o orderRow) bool {
		return o.clientID != nil && *o.clientID == clientID && o.instrument == j.instrument && topics.IsLiveOrderStatus(o.status)
	})
	if i < 0 {
		item.Code, item.Message = topics.CodeNoSuchOrder, fmt.Sprintf("no live order with clientOrderId %s of this account in %s", short(clientID), j.instrument)
		return item
	}
	id := j.rows[i].id
	item.OrderID = &id
	return j.live(item, j.rows[i])
}

func (j *judge) live(item cancelItem, o orderRow) cancelItem {
	if item.ClientOrderID == nil {
		item.ClientOrderID = o.clientID
	}
	switch {
	case !topics.IsLiveOrderStatus(o.status):
		item.Code, item.Message = topics.CodeOrderDone, fmt.Sprintf("order %d is already done or cancelled (status %d)", o.id, o.status)
	case j.named[o.id]:
		item.Code, item.Message = topics.CodeOrderDone, fmt.Sprintf("order %d is named twice in this request", o.id)
	default:
		j.named[o.id] = true
		item.Code = topics.CodeCancelled
	}
	return item
}

// cancelCommand is one cancel command to publish.
type cancelCommand struct {
	typ     string
	slot    uint64
	payload any
}

// publishCancels publishes cancel commands on their slots' partitions and
// waits for Kafka (503 when it does not acknowledge them in time; they
// may still arrive once the broker is back). Their ids are unique per
// command; a cancel the client repeats is a new command. When answers
// wait for the matcher, each command is registered before it is sent and
// its decision returned, in the order of cmds; the caller forgets them.
func (s *Service) publishCancels(ctx context.Context, cmds []cancelCommand) ([]*decision, error) {
	if len(cmds) == 0 {
		return nil, nil
	}
	layout, err := s.slotLayout(ctx)
	if err != nil {
		return nil, err
	}
	at := s.cfg.Now()
	recs := make([]*kgo.Record, len(cmds))
	ids := make([]string, len(cmds))
	for i, cmd := range cmds {
		ids[i] = "cancel:" + s.cancelPrefix + "-" + strconv.FormatInt(s.cancelSeq.Add(1), 10)
		e, err := topics.OrderCommandEnvelope(cmd.typ, ids[i], at, cmd.payload)
		if err != nil {
			return nil, err
		}
		if recs[i], err = kafka.NewSlotRecord(topics.Orders, layout, cmd.slot, e); err != nil {
			return nil, err
		}
	}
	var decs []*decision
	if s.decisions != nil {
		for _, id := range ids {
			decs = append(decs, s.decisions.expectCancel(id))
		}
	}
	if err := s.outbox.Send(recs); err != nil {
		if decs != nil {
			s.decisions.forgetCancels(decs)
		}
		return nil, fmt.Errorf("publish cancel commands: %w", err)
	}
	return decs, nil
}
