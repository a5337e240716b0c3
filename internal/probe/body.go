package probe

import (
	"strings"
	"unicode/utf8"
)

// boundText turns at most max+1 bytes read from a body into the text
// stored in a status: valid UTF-8 (a status is JSON), at most max bytes,
// cut on a character boundary. Invalid bytes become U+FFFD, the same way
// every time, so an unchanged body never looks changed. truncated is true
// when the body was longer than max, or grew past it by the replacements.
func boundText(raw []byte, limit int64) (text string, truncated bool) {
	if int64(len(raw)) > limit {
		raw, truncated = trimPartialRune(raw[:limit]), true
	}
	text = strings.ToValidUTF8(string(raw), string(utf8.RuneError))
	if int64(len(text)) > limit {
		// Each replacement is three bytes for what may have been one.
		text, truncated = cutAtRune(text, int(limit)), true
	}
	return text, truncated
}

// trimPartialRune drops the start of a multi-byte character that the cut
// at the limit left incomplete, so that it is not turned into U+FFFD.
func trimPartialRune(b []byte) []byte {
	// An incomplete character is at most UTFMax-1 bytes long.
	for i := len(b) - 1; i >= 0 && i >= len(b)-(utf8.UTFMax-1); i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			return b
		}
	}
	return b
}

// cutAtRune returns the longest prefix of the valid UTF-8 s that is at
// most n bytes and ends on a character boundary.
func cutAtRune(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
