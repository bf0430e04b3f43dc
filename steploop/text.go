package steploop

import (
	"fmt"
	"unicode/utf8"

	"github.com/invoiced/invoiced/jsondoc"
)

// stepText streams one model step's text (or reasoning) into a part of
// the answer. It opens the part at the first character, holds back a
// character split across two deltas until the rest arrives (each delta is
// JSON-encoded on its own, which would turn either half into U+FFFD), and
// stores exactly what the client is sent: U+0000, which PostgreSQL cannot
// store, and invalid UTF-8 become U+FFFD. Otherwise the client's copy
// would differ from the stored one and its next message be refused.
type stepText struct {
	t     *turn
	kind  string // "text" or "reasoning"
	idx   int    // the part's index in the answer; -1 until opened
	id    string
	carry string
}

func (s *stepText) write(delta string) {
	delta, s.carry = s.carry+delta, ""
	if n := partialRuneTail(delta); n > 0 {
		delta, s.carry = delta[:len(delta)-n], delta[len(delta)-n:]
	}
	s.emit(delta)
}

func (s *stepText) emit(delta string) {
	delta = jsondoc.StorableText(delta)
	if delta == "" {
		return
	}
	t := s.t
	a := t.asst()
	if s.idx < 0 {
		t.texts++
		s.id = fmt.Sprintf("%s-%d", s.kind, t.texts)
		t.out.send(chunk{"type": s.kind + "-start", "id": s.id})
		p := Part{Type: s.kind, Text: strPtr(""), State: "streaming"}
		if s.kind == "reasoning" {
			// ai@7 keeps a reasoning part's id; a text part's it drops.
			p.ID = s.id
		}
		a.Parts = append(a.Parts, p)
		s.idx = len(a.Parts) - 1
	}
	*a.Parts[s.idx].Text += delta
	t.out.send(chunk{"type": s.kind + "-delta", "id": s.id, "delta": delta})
	t.out.flushSoon()
}

// end sends what was held back and closes the part, which a later delta
// then opens anew. The client marks it done at its end chunk, so the
// stored copy does too, whether or not the step then failed. A stopped
// answer gets no end chunk, as ai@7's own aborted streams do not: its
// part stays streaming, in the stored copy and in every client's.
func (s *stepText) end() {
	if s.carry != "" {
		c := s.carry
		s.carry = ""
		s.emit(c)
	}
	if s.idx < 0 {
		return
	}
	if !s.t.stoppedByUser() {
		s.t.out.send(chunk{"type": s.kind + "-end", "id": s.id})
		s.t.asst().Parts[s.idx].State = "done"
	}
	s.idx = -1
}

// partialRuneTail is the length of an incomplete UTF-8 sequence ending
// str (a character whose remaining bytes have not arrived), or 0.
func partialRuneTail(str string) int {
	for i := 1; i < utf8.UTFMax && i <= len(str); i++ {
		if utf8.RuneStart(str[len(str)-i]) {
			if utf8.FullRuneInString(str[len(str)-i:]) {
				return 0
			}
			return i
		}
	}
	return 0
}
