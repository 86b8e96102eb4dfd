package topics

// The declarations the generator's test compiles with the topics
// package's helpers: every shape of field the generator handles.

type Level int8

type Label string

type Flag bool

//topics:appendjson
type AllOptional struct {
	A string `json:"a,omitempty"`
	B int    `json:"b,omitempty"`
	C bool   `json:"c,omitempty"`
}

//topics:appendjson
type LeadingOptional struct {
	Note  *string `json:"note,omitempty"`
	Count uint    `json:"count,omitzero"`
	Name  string  `json:"name"`
	Tail  []int   `json:"tail,omitempty"`
}

type Inner struct {
	Label  Label    `json:"label"`
	Levels []Level  `json:"levels"`
	Deep   [][]bool `json:"deep"`
}

//topics:appendjson
type Marked struct {
	ID   uint32 `json:"id"`
	Tags []string
}

// Shapes is a payload of every other shape.
//
//topics:appendjson
//topics:readjson
type Shapes struct {
	I8       int8     `json:"i8"`
	I16      int16    `json:"i16"`
	I32      int32    `json:"i32"`
	U8       uint8    `json:"u8"`
	U16      uint16   `json:"u16"`
	U64      uint64   `json:"u64,omitempty"`
	Lv       Level    `json:"lv"`
	Lb       Label    `json:"lb,omitempty"`
	Fl       Flag     `json:"fl"`
	Ptr      *int     `json:"ptr"`
	PtrLabel *Label   `json:"ptrLabel,omitzero"`
	In       Inner    `json:"in,omitempty"`
	PtrIn    *Inner   `json:"ptrIn"`
	M        Marked   `json:"m"`
	PtrM     *Marked  `json:"ptrM,omitempty"`
	Ms       []Marked `json:"ms"`
	Labels   []Label  `json:"labels,omitzero"`
	Escaped  string   `json:"a<b&c>"`
	Dash     string   `json:"-,"`
	Skipped  string   `json:"-"`
	unexp    string   // json.Marshal skips it, and so must the encoder
	Untagged string
}
