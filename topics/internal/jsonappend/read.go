package main

import "strconv"

// readMethod writes the ReadJSON method of struct t. It reads members of
// the kinds the scanner reads (strings, booleans, integers, and pointers
// to them, null or not); a member of any other kind, like a name it does
// not know, makes it decline.
func (w *writer) readMethod(recv string, t *typ) {
	w.line("\n// ReadJSON sets %s from data, a JSON object, and reports whether it could", recv)
	w.line("// read it exactly as json.Unmarshal would. It reads the plain form the")
	w.line("// producers write, without reflection, and declines (false, %s", recv)
	w.line("// unchanged) anything else: escapes and non-ASCII bytes in strings,")
	w.line("// unknown, repeated or case-folded member names, nulls, numbers that are")
	w.line("// not integers in range. The caller then decodes data with encoding/json,")
	w.line("// which reads it or says what is wrong with it.")
	w.line("func (%s *%s) ReadJSON(data []byte) bool {", recv, t.name)
	w.line("s := scanner{b: data, ok: true}")
	w.line("var v %s", t.name)
	w.line("var seen, bit uint64")
	w.line("s.object(func(name []byte) bool {")
	w.line("switch string(name) {")
	for i, f := range t.fields {
		if f.typ.kind == kPtr {
			// null leaves the pointer nil, as encoding/json does; a value
			// gets a variable of its own.
			read := scan(f.typ.elem)
			if read == "" {
				continue
			}
			w.line("case %s:", strconv.Quote(f.jsonName))
			w.line("bit = 1 << %d", i)
			w.line("if !s.null() {")
			w.line("val := %s", read)
			w.line("v.%s = &val", f.goName)
			w.line("}")
			continue
		}
		read := scan(f.typ)
		if read == "" {
			continue // declined with the unknown names
		}
		w.line("case %s:", strconv.Quote(f.jsonName))
		w.line("bit = 1 << %d", i)
		w.line("v.%s = %s", f.goName, read)
	}
	w.line("default:")
	w.line("// encoding/json matches names without regard to case and lets")
	w.line("// a repeated name win: leave both to it.")
	w.line("return false")
	w.line("}")
	w.line("if seen&bit != 0 {")
	w.line("return false")
	w.line("}")
	w.line("seen |= bit")
	w.line("return s.ok")
	w.line("})")
	w.line("s.end()")
	w.line("if s.ok {")
	w.line("*%s = v", recv)
	w.line("}")
	w.line("return s.ok")
	w.line("}")
}

// scan is the expression that reads a value of type t, or "" for a type
// the scanner does not read.
func scan(t *typ) string {
	var read, to string
	switch t.kind {
	case kString:
		read, to = "s.str()", "string"
	case kBool:
		read, to = "s.bool()", "bool"
	case kInt:
		read, to = "s.int("+bits(t)+")", "int64"
	case kUint:
		read, to = "s.uint("+bits(t)+")", "uint64"
	default:
		return ""
	}
	if t.builtin && t.expr == to {
		return read
	}
	return t.expr + "(" + read + ")"
}

// bits is the width of integer type t as the generated code names it:
// intSize, the size of int, for int, uint and uintptr.
func bits(t *typ) string {
	if t.bits == 0 {
		return "intSize"
	}
	return strconv.Itoa(t.bits)
}
