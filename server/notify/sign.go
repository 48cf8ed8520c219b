package notify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Headers of a signed request, and of every delivery: its id (the same
// on every attempt, for a receiver to drop a body it already has) and its
// event.
const (
	TimestampHeader = "X-Myriarch-Timestamp"
	SignatureHeader = "X-Myriarch-Signature"
	DeliveryHeader  = "X-Myriarch-Delivery"
	EventHeader     = "X-Myriarch-Event"
)

// ReplayWindow is how far from a receiver's clock a timestamp may be.
const ReplayWindow = 5 * time.Minute

// Sign returns the timestamp and signature headers' values of body sent
// at ts.
func Sign(secret []byte, ts time.Time, body []byte) (timestamp, signature string) {
	timestamp = strconv.FormatInt(ts.Unix(), 10)
	return timestamp, "sha256=" + hex.EncodeToString(mac(secret, timestamp, body))
}

func mac(secret []byte, timestamp string, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(timestamp))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// Errors of Verify.
var (
	ErrBadSignature = errors.New("signature does not match")
	ErrStale        = errors.New("timestamp outside the replay window")
)

// Verify checks a request's headers against body as a receiver should:
// the signature in constant time, then the timestamp within ReplayWindow
// of now.
func Verify(secret []byte, timestamp, signature string, body []byte, now time.Time) error {
	ts, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil || timestamp != strconv.FormatInt(ts, 10) {
		return fmt.Errorf("%s %q: not a Unix time in seconds", TimestampHeader, timestamp)
	}
	hexSig, ok := strings.CutPrefix(signature, "sha256=")
	if !ok {
		return fmt.Errorf("%s %q: want sha256=<hex>", SignatureHeader, signature)
	}
	got, err := hex.DecodeString(hexSig)
	if err != nil {
		return fmt.Errorf("%s: %w", SignatureHeader, err)
	}
	if !hmac.Equal(got, mac(secret, timestamp, body)) {
		return ErrBadSignature
	}
	if d := now.Sub(time.Unix(ts, 0)); d > ReplayWindow || d < -ReplayWindow {
		return fmt.Errorf("%w: %s from now", ErrStale, d.Round(time.Second))
	}
	return nil
}
