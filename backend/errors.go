package backend

import (
	"context"
	"errors"
	"fmt"
)

// Kind classifies a storage failure. Callers decide with errors.Is on the
// sentinels below, never by reading messages.
type Kind int

const (
	// KindNone is the kind of a nil error.
	KindNone Kind = iota
	// KindTransient: the request did not take effect and may be retried.
	KindTransient
	// KindConfiguration: bad URL, credentials, bucket or settings; retrying will not help.
	KindConfiguration
	// KindNotFound: the key does not exist.
	KindNotFound
	// KindPrecondition: a conditional write lost (key exists, version moved).
	KindPrecondition
	// KindPermanent: the request was refused and will be refused again.
	KindPermanent
	// KindUnknown: the request may or may not have taken effect. It never
	// authorises a replay: the caller must read back to learn the outcome.
	KindUnknown
)

// Sentinels for errors.Is.
var (
	ErrTransient     = errors.New("transient storage failure")
	ErrConfiguration = errors.New("storage configuration error")
	ErrNotFound      = errors.New("not found")
	ErrPrecondition  = errors.New("precondition failed")
	ErrPermanent     = errors.New("permanent storage failure")
	ErrUnknown       = errors.New("outcome unknown")
)

var kindSentinels = map[Kind]error{
	KindTransient:     ErrTransient,
	KindConfiguration: ErrConfiguration,
	KindNotFound:      ErrNotFound,
	KindPrecondition:  ErrPrecondition,
	KindPermanent:     ErrPermanent,
	KindUnknown:       ErrUnknown,
}

func (k Kind) String() string {
	switch k {
	case KindNone:
		return "none"
	case KindTransient:
		return "transient"
	case KindConfiguration:
		return "configuration"
	case KindNotFound:
		return "not_found"
	case KindPrecondition:
		return "precondition"
	case KindPermanent:
		return "permanent"
	case KindUnknown:
		return "unknown"
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Error is a classified storage failure. Its message names the operation and
// the key (keys are relative and carry no credentials) and the cause, redacted.
type Error struct {
	Op   string
	Key  string
	Kind Kind
	Err  error
}

// NewError classifies err as kind for operation op on key.
func NewError(op, key string, kind Kind, err error) *Error {
	return &Error{Op: op, Key: key, Kind: kind, Err: err}
}

// Error names the operation and the failure class, never the key: storage
// keys are internal and paths may be private, and this text reaches users
// and logs (Key stays on the value for callers that need it).
func (e *Error) Error() string {
	msg := e.Op + ": " + e.Kind.String()
	if e.Err != nil {
		msg += ": " + Redact(e.Err.Error())
	}
	return msg
}

// Unwrap exposes the cause (so context errors stay visible).
func (e *Error) Unwrap() error { return e.Err }

// Is matches the kind's sentinel.
func (e *Error) Is(target error) bool { return kindSentinels[e.Kind] == target }

// ErrMissingKey is the cause of a PutIfMatch on a missing key: the error
// is a Precondition failure (the condition "the object is at this version"
// lost) whose chain also satisfies errors.Is(err, ErrNotFound).
var ErrMissingKey = fmt.Errorf("the key does not exist: %w", ErrNotFound)

// MatchMissing is the error every adapter returns for PutIfMatch on a
// missing key, whatever its store answers (AWS S3 404 NoSuchKey, others 412).
func MatchMissing(op, key string) *Error {
	return NewError(op, key, KindPrecondition, ErrMissingKey)
}

// NormalizeMatch maps a NotFound answer to PutIfMatch onto MatchMissing and
// returns any other error unchanged.
func NormalizeMatch(op, key string, err error) error {
	if err != nil && KindOf(err) == KindNotFound {
		return MatchMissing(op, key)
	}
	return err
}

// KindOf returns the failure class of err. Context cancellation and deadline
// are Transient unless wrapped in a more specific Error; an unclassified error
// is Unknown, because nothing proves it had no effect.
func KindOf(err error) Kind {
	if err == nil {
		return KindNone
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	for k, s := range kindSentinels {
		if errors.Is(err, s) {
			return k
		}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return KindTransient
	}
	return KindUnknown
}

// StoreStatus is the HTTP status the store answered a failed request with
// (404 for S3's NoSuchBucket, 403 for a refused credential), or 0 when the
// request got no HTTP answer: a transport failure, a local store, a refusal
// before anything was sent. The kind says what the failure means to the
// engine; the status is what the store said, and logs carry both, so a
// missing bucket is logged as configuration with the store's 404. An error
// carries it by implementing StoreStatus() int anywhere in its chain (the
// cloud adapters' causes do).
func StoreStatus(err error) int {
	var sc interface{ StoreStatus() int }
	if errors.As(err, &sc) {
		return sc.StoreStatus()
	}
	return 0
}

// IsNotFound is shorthand for errors.Is(err, ErrNotFound).
func IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

// IsPrecondition is shorthand for errors.Is(err, ErrPrecondition).
func IsPrecondition(err error) bool { return errors.Is(err, ErrPrecondition) }
