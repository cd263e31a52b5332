package backend

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// ValidateKey reports whether key may be stored. A key is a non-empty,
// valid UTF-8, slash-separated relative path with no empty, "." or ".."
// segment, no NUL byte, and no segment shaped like a local temp name
// (name#<digits>), which the local backend reserves for in-flight writes.
func ValidateKey(key string) error {
	if err := validatePath(key); err != nil {
		return NewError("validate", key, KindPermanent, err)
	}
	return nil
}

// ValidatePrefix is ValidateKey for list and delete prefixes: empty is
// allowed (everything), and a trailing slash is allowed.
func ValidatePrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	p := strings.TrimSuffix(prefix, "/")
	if p == "" {
		return NewError("validate", prefix, KindPermanent, fmt.Errorf("prefix %q is not a relative path", prefix))
	}
	if err := validatePath(p); err != nil {
		return NewError("validate", prefix, KindPermanent, err)
	}
	return nil
}

func validatePath(key string) error {
	switch {
	case key == "":
		return fmt.Errorf("empty key")
	case !utf8.ValidString(key):
		return fmt.Errorf("key is not valid UTF-8")
	case strings.ContainsRune(key, 0):
		return fmt.Errorf("key contains a NUL byte")
	case strings.HasPrefix(key, "/"):
		return fmt.Errorf("key must be relative (no leading slash)")
	}
	for _, seg := range strings.Split(key, "/") {
		switch {
		case seg == "":
			return fmt.Errorf("key has an empty segment (a doubled or trailing slash)")
		case seg == "." || seg == "..":
			return fmt.Errorf("key has a %q segment", seg)
		case IsTempName(seg):
			return fmt.Errorf("segment %q is shaped like a local temp name (name#<digits>); pick another name", seg)
		}
	}
	return nil
}

// IsTempName reports whether a path segment has the local backend's temp-file
// shape: anything, '#', then one or more ASCII digits.
func IsTempName(seg string) bool {
	i := strings.LastIndexByte(seg, '#')
	if i < 0 || i == len(seg)-1 {
		return false
	}
	for _, c := range seg[i+1:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
