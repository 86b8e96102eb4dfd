package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/format"
	"strconv"
	"strings"
)

// generate returns the generated files of the package in dir by name.
func generate(dir string) (map[string][]byte, error) {
	p, err := parse(dir)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	for _, s := range p.files {
		if len(s.specs) == 0 {
			continue
		}
		w := &writer{}
		fmt.Fprintf(&w.buf, "%s\npackage %s\n", header, p.name)
		for _, m := range s.specs {
			name := m.spec.Name.Name
			t, err := p.resolveNamed(name, nil)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", s.name, err)
			}
			if t.kind != kStruct {
				return nil, fmt.Errorf("%s: %s is marked but is not a struct", s.name, name)
			}
			recv := p.receiver(name)
			if locals[recv] {
				recv = "x"
			}
			if m.append {
				w.appendMethod(recv, t)
			}
			if m.read {
				if len(t.fields) > 64 { // the members seen are a uint64
					return nil, fmt.Errorf("%s: %s has more than 64 members to read", s.name, name)
				}
				w.readMethod(recv, t)
			}
		}
		src, err := format.Source(w.buf.Bytes())
		if err != nil {
			return nil, fmt.Errorf("%s: format generated code: %w\n%s", s.name, err, w.buf.Bytes())
		}
		files[strings.TrimSuffix(s.name, ".go")+"_json.go"] = src
	}
	return files, nil
}

// locals are the names the generated methods declare (and their
// numbered variants' prefixes): a receiver must not be one of them.
var locals = map[string]bool{"dst": true, "data": true, "s": true, "v": true, "seen": true, "bit": true, "name": true}

// writer accumulates generated code. Constant text to append is held in
// pending and written with the next value (as its name argument) or when
// code that branches or loops comes, so that a member's name and the
// punctuation before it are one append.
type writer struct {
	buf     bytes.Buffer
	pending string
	vars    int // counter for the names of loop and position variables
}

func (w *writer) line(format string, args ...any) {
	fmt.Fprintf(&w.buf, format, args...)
	w.buf.WriteByte('\n')
}

func (w *writer) lit(s string) { w.pending += s }

// take returns the pending text as a Go string literal and clears it.
func (w *writer) take() string {
	s := goString(w.pending)
	w.pending = ""
	return s
}

// takeArgs returns the pending text as the arguments of append after dst
// and clears it.
func (w *writer) takeArgs() string {
	if len(w.pending) == 1 {
		c := w.pending[0]
		w.pending = ""
		return strconv.QuoteRune(rune(c))
	}
	return w.take() + "..."
}

// flush appends the pending text.
func (w *writer) flush() {
	if w.pending != "" {
		w.line("dst = append(dst, %s)", w.takeArgs())
	}
}

func (w *writer) newVar(prefix string) string {
	w.vars++
	return prefix + strconv.Itoa(w.vars)
}

// goString writes s as a Go literal, raw when it can be.
func goString(s string) string {
	if strconv.CanBackquote(s) {
		return "`" + s + "`"
	}
	return strconv.Quote(s)
}

// jsonName is a member name as json.Marshal writes it, quotes and colon
// included.
func jsonName(name string) string {
	b, _ := json.Marshal(name) // a string always marshals
	return string(b) + ":"
}

func (w *writer) appendMethod(recv string, t *typ) {
	w.vars = 0
	w.line("\n// AppendJSON appends the JSON encoding of %s to dst: exactly the bytes", recv)
	w.line("// json.Marshal writes for it, without reflection.")
	w.line("func (%s *%s) AppendJSON(dst []byte) []byte {", recv, t.name)
	w.object(recv, t)
	w.line("return append(dst, %s)", w.takeArgs())
	w.line("}")
}

// object writes the members of struct t, the value of expression x, and
// leaves its closing brace pending.
func (w *writer) object(x string, t *typ) {
	w.lit("{")
	// Until a member that is always written comes, whether a comma is
	// due depends on what was written since the brace.
	var start string
	if len(t.fields) > 1 && omissible(t.fields[0]) {
		w.flush()
		start = w.newVar("start")
		w.line("%s := len(dst)", start)
	}
	state := wroteNothing
	for _, f := range t.fields {
		comma := func() {
			switch state {
			case wroteSome:
				w.lit(",")
			case wroteMaybe:
				w.flush()
				w.line("if len(dst) > %s {", start)
				w.line("dst = append(dst, ',')")
				w.line("}")
			}
		}
		v := x + "." + f.goName
		if !omissible(f) {
			comma()
			w.lit(jsonName(f.jsonName))
			w.value(v, f.typ, false)
			state = wroteSome
			continue
		}
		w.flush()
		w.line("if %s {", omitTest(v, f))
		comma()
		w.lit(jsonName(f.jsonName))
		w.value(v, f.typ, true) // omitTest holds pointers and slices non-nil
		w.flush()
		w.line("}")
		if state == wroteNothing {
			state = wroteMaybe
		}
	}
	w.lit("}")
}

// The states of an object's members already written, for the comma.
const (
	wroteNothing = iota
	wroteMaybe
	wroteSome
)

// omissible reports whether json.Marshal may leave member f out.
func omissible(f field) bool {
	return (f.omitEmpty || f.omitZero) && f.typ.kind != kStruct
}

// omitTest is the condition under which member f, the value of v, is
// written.
func omitTest(v string, f field) string {
	switch f.typ.kind {
	case kString:
		return v + ` != ""`
	case kBool:
		return v
	case kInt, kUint:
		return v + " != 0"
	case kSlice:
		if f.omitEmpty {
			return "len(" + v + ") > 0"
		}
	}
	return v + " != nil"
}

// value writes the value of expression v of type t after the pending
// text. nonNil says that a pointer or a slice v is known not to be nil.
func (w *writer) value(v string, t *typ, nonNil bool) {
	switch t.kind {
	case kString:
		w.line("dst = appendStringField(dst, %s, %s)", w.take(), convert(v, t, "string"))
	case kBool:
		w.line("dst = appendBoolField(dst, %s, %s)", w.take(), convert(v, t, "bool"))
	case kInt:
		w.line("dst = appendIntField(dst, %s, %s)", w.take(), convert(v, t, "int64"))
	case kUint:
		w.line("dst = appendUintField(dst, %s, %s)", w.take(), convert(v, t, "uint64"))
	case kPtr:
		w.pointer(v, t, nonNil)
	case kSlice:
		w.slice(v, t, nonNil)
	case kStruct:
		if t.marked {
			w.flush()
			w.line("dst = %s.AppendJSON(dst)", v)
			return
		}
		w.object(v, t)
	}
}

// convert converts v of type t to the type a helper takes.
func convert(v string, t *typ, to string) string {
	if t.builtin && t.expr == to {
		return v
	}
	return to + "(" + v + ")"
}

func (w *writer) pointer(v string, t *typ, nonNil bool) {
	if !nonNil {
		w.orNull(v)
	}
	if t.elem.kind == kStruct {
		w.value(v, t.elem, false) // a selector through the pointer
	} else {
		w.value("*"+v, t.elem, false)
	}
	if !nonNil {
		w.flush()
		w.line("}")
	}
}

// orNull writes null after the pending text when v is nil, and opens the
// else branch, with the pending text, that the caller flushes and closes.
func (w *writer) orNull(v string) {
	before := w.pending
	w.pending = ""
	w.line("if %s == nil {", v)
	w.lit(before + "null")
	w.flush()
	w.line("} else {")
	w.lit(before)
}

func (w *writer) slice(v string, t *typ, nonNil bool) {
	if t.elem.kind == kString && t.elem.builtin {
		w.line("dst = appendStringsField(dst, %s, %s)", w.take(), v)
		return
	}
	if !nonNil {
		w.orNull(v)
	}
	w.lit("[")
	w.flush()
	i, e := w.newVar("i"), w.newVar("e")
	w.line("for %s := range %s {", i, v)
	w.line("if %s > 0 {", i)
	w.line("dst = append(dst, ',')")
	w.line("}")
	w.line("%s := &%s[%s]", e, v, i)
	switch t.elem.kind {
	case kStruct:
		w.value(e, t.elem, false)
	case kSlice:
		w.value("(*"+e+")", t.elem, false)
	default:
		w.value("*"+e, t.elem, false)
	}
	w.flush()
	w.line("}")
	w.lit("]")
	if !nonNil {
		w.flush()
		w.line("}")
	}
}
