package postgres

// PostgreSQL advisory lock keys myriarchd takes, one per purpose, so that
// they never collide with each other (or, with this prefix, with another
// application's on the same database).
const (
	// lockMigrate is held (per transaction) while the schema is migrated.
	lockMigrate int64 = 0x6d79_7261_0001
	// lockLeader is held (per session, on a connection of its own) by the
	// instance that leads those sharing the database (see Campaign).
	lockLeader int64 = 0x6d79_7261_0002
	// lockAccounts is held (per transaction) while a user is changed or
	// deleted, so the last admin is never taken away by two at once.
	lockAccounts int64 = 0x6d79_7261_0003
	// lockAudit is held (per transaction) while a record is appended to
	// the audit trail or the trail is cut, so that the instances sharing
	// the database write one chain.
	lockAudit int64 = 0x6d79_7261_0004
)
