// Package agent is the myriarch-updater's tree: the OpAMP agent that runs
// next to an OpenTelemetry Collector, reports it to the myriarch server and
// installs the packages the server offers. It holds no code of its own;
// cmd/myriarch-updater wires its packages together.
//
//	config             updater.yaml: defaults, strict loading, validation
//	                   (the checks of each mode's own settings in modes.go)
//	updater            the OpAMP agent: description, health, offers
//	mode               the contract of a collector mode (Mode, Runtime)
//	mode/binarymode    binary mode: a binary under the OpAMP Supervisor
//	mode/containermode container mode: a Docker container
//	modes              the one place that chooses a mode by name
//	install            the install transaction, its back-ends (binary,
//	                   container, selfupdate) and ReadStatus, which reads
//	                   every state file they write
//	supervisor         starting, stopping and restarting the Supervisor
//	download, verify,  fetching, checking and unpacking artifacts
//	unpack
//	journal, statefile durable state under state_dir
//	providers          host facts the updater reports (providerreport)
//	service            running as an OS service
//
// A collector mode is chosen once: modes.For(cfg) returns the Runtime of
// updater.yaml's mode, and nothing else looks at the mode. A Runtime builds
// the mode's install engine (NewEngine), hands the updater the supervisor
// controller it runs or restarts (Supervisor) and the description
// attributes the configuration fixes (Attributes), and, when the mode can
// tell which collector version runs, looks it up (mode.RunningLooker). Where
// the mode keeps its install state (Mode.State, an install.Layout) is known
// without building anything, so `myriarch-updater status` reads it with
// install.ReadStatus.
//
// # Adding a collector mode
//
//  1. Add one package, agent/mode/<name>mode, with func Mode() mode.Mode:
//     its state layout and a New that builds its mode.Runtime (implement
//     mode.RunningLooker too when it can look up which version runs). Its
//     install back-end, when it needs a new one, lives in that package or
//     under agent/install like binary and container.
//  2. Register it with one line in agent/modes (the all map).
//  3. In agent/config/modes.go, add its name to the mode constants and one
//     line to modeChecks (nil when it reads no settings of its own; a
//     mode with its own updater.yaml section adds that section to Config).
//
// The modes tests check that every mode updater.yaml accepts has an
// implementation and the reverse.
package agent
