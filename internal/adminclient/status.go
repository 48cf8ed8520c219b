package adminclient

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// StatusError is an answer of the admin API other than 2xx, with the
// server's message.
type StatusError struct {
	Method, Path string
	Code         int    // 404
	Status       string // "404 Not Found"
	Message      string // the error and its details, one per line
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%s %s: %s: %s", e.Method, e.Path, e.Status, e.Message)
}

// Refused reports whether the server refused the request (4xx): no
// credential, not allowed, no such object, a conflict, an invalid request
// (cmdline.ExitRefused).
func (e *StatusError) Refused() bool { return e.Code >= 400 && e.Code < 500 }

func newStatusError(method, path string, code int, status string, data []byte) *StatusError {
	var body struct {
		Error    string   `json:"error"`
		Details  []string `json:"details"`
		Problems []struct {
			File    string `json:"file"`
			Line    int    `json:"line"`
			Message string `json:"message"`
		} `json:"problems"` // an estate's, each in its file
	}
	msg := string(bytes.TrimSpace(data))
	if json.Unmarshal(data, &body) == nil && body.Error != "" {
		msg = body.Error
		for _, d := range body.Details {
			msg += "\n  " + d
		}
		for _, p := range body.Problems {
			msg += fmt.Sprintf("\n  %s:%d: %s", p.File, p.Line, p.Message)
		}
	}
	return &StatusError{Method: method, Path: path, Code: code, Status: status, Message: msg}
}
