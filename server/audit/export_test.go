package audit

// SetCutChunk makes t's cuts remove at most n records each (tests).
func (t *Trail) SetCutChunk(n int) { t.cutChunk = n }

// SetVerifyBatch makes t's verification read n records at a time (tests).
func (t *Trail) SetVerifyBatch(n int) { t.verifyBatch = n }

// Queued is how many appends wait for a batch (tests).
func (t *Trail) Queued() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.queue)
}
