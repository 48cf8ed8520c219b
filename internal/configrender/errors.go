package configrender

import (
	"fmt"
	"strings"
)

// Error is a render that cannot be sent: it names the Blueprint and, when
// one Component is at fault, the Component and the variable or rule.
type Error struct {
	Blueprint string
	// Component is the rendered id of the Component at fault, with its
	// class, e.g. "exporter file/out"; empty for the whole document.
	Component string
	// Source is the Component as the estate names it (team/name@version or
	// a local name); empty when Component is.
	Source string
	// Variable is the reference as written, when one is missing.
	Variable string
	// Reason says what is wrong.
	Reason string
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "blueprint %s", e.Blueprint)
	if e.Component != "" {
		fmt.Fprintf(&b, ": %s", e.Component)
		if e.Source != "" && !strings.HasSuffix(e.Component, "/"+e.Source) {
			fmt.Fprintf(&b, " (component %s)", e.Source)
		}
	}
	b.WriteString(": ")
	b.WriteString(e.Reason)
	return b.String()
}

// Dropped is a receiver (or one copy of it) left out of a render: a
// variable it references is not in the context, or a dynamic provider had
// nothing for it.
type Dropped struct {
	Receiver string `json:"receiver"`           // rendered id
	Source   string `json:"source"`             // the Component as the estate names it
	Variable string `json:"variable,omitempty"` // the missing reference as written
	Reason   string `json:"reason,omitempty"`   // why, when not a missing variable
}

func (d Dropped) String() string {
	if d.Variable == "" {
		return fmt.Sprintf("receiver %s dropped: %s", d.Receiver, d.Reason)
	}
	return fmt.Sprintf("receiver %s dropped: %s is not in the context", d.Receiver, d.Variable)
}

// Warning is something a render left out of a collector's configuration:
// the assignment lists it, so a collector never looks in sync while part
// of what it should collect was dropped.
type Warning struct {
	// Kind is what happened: WarningReceiverDropped.
	Kind string `json:"kind"`
	// Component is the rendered id of the receiver (or copy) left out.
	Component string `json:"component"`
	// Variable is the missing reference as written ("" when a dynamic
	// provider had no mapping, see Reason).
	Variable string `json:"variable"`
	// Source is the Component as the estate names it.
	Source string `json:"source"`
	// Reason says why when no variable is missing.
	Reason string `json:"reason,omitempty"`
}

// WarningReceiverDropped is a receiver left out of a render.
const WarningReceiverDropped = "receiver_dropped"

// Warning is d as an assignment's warning.
func (d Dropped) Warning() Warning {
	return Warning{Kind: WarningReceiverDropped, Component: d.Receiver, Variable: d.Variable, Source: d.Source, Reason: d.Reason}
}

func (w Warning) String() string {
	if w.Variable == "" {
		return fmt.Sprintf("receiver %s (%s) dropped: %s", w.Component, w.Source, w.Reason)
	}
	return fmt.Sprintf("receiver %s (%s) dropped: %s is not in the collector's context", w.Component, w.Source, w.Variable)
}
