package engine

import (
	"math/bits"
	"strconv"
)

// fixed is an exact non-negative decimal, coef × 10^-scale, small enough for
// machine arithmetic. Prices, quantities and fees of the hot path use it;
// shopspring/decimal stays at the edges (market parameters, messages,
// anything that does not fit), so that every figure on the wire is the same
// exact decimal either way (docs/architecture.md "Exact money").
type fixed struct {
	coef  uint64
	scale int
}

// maxFixedScale keeps 10^scale within a uint64.
const maxFixedScale = 19

// parseFixed reads digits with an optional fraction ("21000", "0.000000002").
// Anything else (signs, exponents, more digits than a uint64 holds) is not
// ok and is left to shopspring/decimal.
func parseFixed(s string) (fixed, bool) {
	var f fixed
	dot := -1
	if s == "" {
		return fixed{}, false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '.' && dot < 0 && i > 0 && i < len(s)-1 {
			dot = i
			continue
		}
		if c < '0' || c > '9' {
			return fixed{}, false
		}
		hi, lo := bits.Mul64(f.coef, 10)
		lo, carry := bits.Add64(lo, uint64(c-'0'), 0)
		if hi != 0 || carry != 0 {
			return fixed{}, false
		}
		f.coef = lo
	}
	if dot >= 0 {
		f.scale = len(s) - dot - 1
	}
	if f.scale > maxFixedScale {
		return fixed{}, false
	}
	return f, true
}

// mul returns a × b when it fits.
func (a fixed) mul(b fixed) (fixed, bool) {
	hi, lo := bits.Mul64(a.coef, b.coef)
	if hi != 0 || a.scale+b.scale > maxFixedScale {
		return fixed{}, false
	}
	return fixed{coef: lo, scale: a.scale + b.scale}, true
}

// append writes a's canonical form, as decimal.Decimal.String does: no
// exponent, no trailing zeros after the point, no point without a
// fraction.
func (a fixed) append(dst []byte) []byte {
	var buf [48]byte
	// Right-align the digits behind enough zeros for "0.<scale digits>".
	digits := strconv.AppendUint(buf[:0], a.coef, 10)
	if a.scale == 0 || a.coef == 0 {
		return append(dst, digits...)
	}
	n := len(digits)
	width := max(n, a.scale+1)
	copy(buf[width-n:], digits)
	for i := range width - n {
		buf[i] = '0'
	}
	point := width - a.scale
	end := width
	for end > point && buf[end-1] == '0' {
		end--
	}
	dst = append(dst, buf[:point]...)
	if end == point {
		return dst
	}
	return append(append(dst, '.'), buf[point:end]...)
}

func (a fixed) String() string { return string(a.append(nil)) }
