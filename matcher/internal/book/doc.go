// Package book is the in-memory order book of one market: price-time
// priority over integer price ticks, so the hot path is integer math and
// slice moves, never decimals.
//
// A book is deterministic: the same calls in the same order give the same
// events in the same order. It holds no clock, no goroutine and no lock; the
// engine that owns it is single-threaded per slot. It knows nothing about
// accounts beyond an id to prevent self-trades, and nothing about funds or
// positions: those checks happen before an order reaches the book.
package book
