package postgres

// PostgreSQL advisory lock keys myriarchd takes, one per purpose, so that
// they never collide with each other (or, with this prefix, with another
// application's on the same database).
const (
	// lockMigrate is held (per transaction) while the schema is migrated.
	lockMigrate int64 = 0x6d79_7261_0001
)
