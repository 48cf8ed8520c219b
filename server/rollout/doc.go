// Package rollout is the kernel every rolled-out thing of a fleet shares:
// package offers and configurations today. It holds what does not depend
// on what is rolled out:
//
//   - Waves: which wave each member is in, its state counted per wave, and
//     which wave gates are open; Gates finds the members of waves an
//     evaluation opened.
//   - State: the persisted part of a fleet's rollout that is alike for
//     every rolled-out thing: an operator's pause, the failure budget
//     (failures since the last resume against the fleet's maxFailures).
//   - States: where those states are kept across restarts and handed from
//     a leading instance to the others, one store key per fleet under a
//     prefix of the rolled-out thing's own.
//   - Summary and Rows: how the fleets API shows a rollout and its waves.
//   - Queue: the coalescing FIFO of agents a rolled-out thing has to send
//     something to, served by a fixed number of goroutines.
//
// What a rolled-out thing decides for one agent (its state names, when a
// member is done, what it sends) stays with it.
//
// A third rolled-out thing plugs in by:
//
//  1. naming its member states and a done func for them, and keeping a
//     *Waves per fleet (New) in which it Sets each member as it evaluates
//     it, noting the gates before (Gates) to evaluate the members of
//     waves that opened;
//  2. embedding State in its persisted per-fleet state, next to what
//     starts a new rollout of it (a target, a digest), and starting one
//     with Restart when that changes; counting failures with Fail and
//     holding new moves while Paused;
//  3. keeping those states with NewStates under its own key prefix:
//     List when it starts, leads or is told the leader wrote, Put what
//     changed while it leads, Delete the states of fleets that are gone;
//  4. answering pause, resume and retry on a fleet with Pause, Resume
//     and a re-evaluation of MemberSet, and showing it with Summarize and
//     Rows;
//  5. sending through a Queue whose Serve goroutines it starts in New and
//     stops with Close.
package rollout
