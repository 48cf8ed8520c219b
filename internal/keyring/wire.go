package keyring

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// The OpAMP custom capability and message that carry a keyring from
// myriarchd to updaters, and the attributes an updater reports of it.
const (
	Capability  = "dev.myriarch.keyring"
	MessageType = "keyring"
	// AttrSerial is the serial of the keyring in force on the host ("0":
	// none yet). An updater that reports it takes keyrings.
	AttrSerial = "dev.myriarch.keyring.serial"
	// AttrRefused says why the last keyring offered was refused
	// ("serial N: reason"); absent when none was.
	AttrRefused = "dev.myriarch.keyring.refused"
	// MaxRefused bounds AttrRefused.
	MaxRefused = 512
)

// Signed is a keyring with its signature, as sent and as kept on the host.
type Signed struct {
	Keyring   []byte `json:"keyring"`
	Signature string `json:"signature"`
}

// Encode is the custom message's data.
func (s Signed) Encode() []byte {
	b, _ := json.Marshal(s)
	return b
}

// Decode reads a custom message's data (bounded by MaxSize for the
// keyring, and as much again for the base64 and the signature).
func Decode(data []byte) (Signed, error) {
	var s Signed
	if len(data) > 2*MaxSize+4096 {
		return s, fmt.Errorf("%w: a message of %d bytes", ErrMalformed, len(data))
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return s, fmt.Errorf("%w: message: %v", ErrMalformed, err)
	}
	return s, nil
}

// ID names a keyring document by its content ("sha256:" and 16
// hexadecimal digits): an updater's refusal starts with it and a colon, so
// the server knows which keyring was refused.
func ID(doc []byte) string {
	sum := sha256.Sum256(doc)
	return "sha256:" + hex.EncodeToString(sum[:8])
}
