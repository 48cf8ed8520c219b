package install

// Layout is where one collector back-end keeps its state under state_dir:
// the engine's files carry Prefix, and Installed is the back-end's record
// of what it installed. Each back-end package says its own (binary.Layout,
// container.Layout); ReadStatus reads a state dir through it.
type Layout struct {
	// Prefix goes before the engine's quarantine, statuses and
	// confirmed-versions file names (Options.StatePrefix), so a host that
	// switched modes never mixes their state.
	Prefix string
	// Installed is the name of the back-end's installed record.
	Installed string
}

// StatusesFile is the name of the engine's persisted statuses.
func (l Layout) StatusesFile() string { return l.Prefix + StatusesFile }
