package steploop

import (
	"fmt"
	"unicode/utf8"

	"github.com/invoiced/invoiced/jsondoc"
)

// stepText streams one model step's text into a text part of the answer.
// It opens the part at the first character, holds back a character split
// across two deltas until the rest arrives (each delta is JSON-encoded on
// its own, which would turn either half into U+FFFD), and stores exactly
// what the client is sent: U+0000, which PostgreSQL cannot store, and
// invalid UTF-8 become U+FFFD. Otherwise the client's copy would differ
// from the stored one and its next message be refused.
type stepText struct {
	t     *turn
	idx   int // the part's index in the answer; -1 until opened
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
		s.id = fmt.Sprintf("text-%d", t.texts)
		t.out.send(chunk{"type": "text-start", "id": s.id})
		a.Parts = append(a.Parts, Part{Type: "text", Text: strPtr(""), State: "streaming"})
		s.idx = len(a.Parts) - 1
	}
	*a.Parts[s.idx].Text += delta
	t.out.send(chunk{"type": "text-delta", "id": s.id, "delta": delta})
	t.out.flushSoon()
}

// end sends what was held back and closes the part: the client marks it
// done at text-end, so the stored copy does too, whether or not the step
// then failed; a client that went away never sees text-end and keeps it
// streaming, and so does the stored copy.
func (s *stepText) end() {
	if s.carry != "" {
		c := s.carry
		s.carry = ""
		s.emit(c)
	}
	if s.idx >= 0 {
		s.t.out.send(chunk{"type": "text-end", "id": s.id})
		if !s.t.clientGone() {
			s.t.asst().Parts[s.idx].State = "done"
		}
	}
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
