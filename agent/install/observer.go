package install

import "time"

// Outcomes of a transaction, as an Observer is told them.
const (
	OutcomeInstalled  = "installed"
	OutcomeFailed     = "failed"      // before activation: nothing running was touched
	OutcomeRolledBack = "rolled_back" // activated, then the previous version put back
)

// Observer is told what the engine does, for the updater's own metrics.
// Its methods are called from the engine's goroutines and must not block.
type Observer interface {
	// Finished: a transaction of pkg ended with outcome after took; fault
	// is the failure's class (Fault.String) when it did not install.
	Finished(pkg string, took time.Duration, outcome, fault string)
	// Downloaded: an artifact of size bytes was downloaded and hashed.
	Downloaded(bytes int64)
	// VerificationFailed: a downloaded artifact's hash or signature did
	// not verify.
	VerificationFailed()
}

// finished tells the observer how t ended.
func (e *Engine) finished(t *Txn, outcome string, f Fault) {
	if e.o.Observer == nil {
		return
	}
	fault := ""
	if outcome != OutcomeInstalled {
		fault = f.String()
	}
	e.o.Observer.Finished(t.rec.Package, time.Since(t.rec.Started), outcome, fault)
}

func (e *Engine) verificationFailed() {
	if e.o.Observer != nil {
		e.o.Observer.VerificationFailed()
	}
}
