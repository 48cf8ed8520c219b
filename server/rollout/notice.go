package rollout

// Notice is told when a fleet's rollout pauses or resumes (event is
// estate.EventRolloutPaused or estate.EventRolloutResumed), by the
// instance that decided it. It is called with its rolled-out thing's lock
// held: it must not block or call back into it. Its zero value tells
// nobody.
type Notice func(event, fleet, message string)

// Say tells n, if it is set.
func (n Notice) Say(event, fleet, message string) {
	if n != nil {
		n(event, fleet, message)
	}
}
